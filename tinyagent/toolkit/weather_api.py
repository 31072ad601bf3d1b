"""A small weather service on loopback: a real HTTP API for lesson 15's weather tool to call.

The third article's agent calls a public weather API over the internet. A classroom has no key for it and
perhaps no internet, and a public API never fails on cue. This one runs on 127.0.0.1, answers from a
fixed table of cities, and can be told to misbehave, which is the point of the lesson:

    with WeatherService() as service:                  # a free port, served from a background thread
        requests.get(service.url("/weather"), params={"city": "杭州"}).json()
        service.inject(delay_s=3, times=1)              # the next request waits 3 s before it answers
        service.inject(status=503)                      # every request fails with 503 until cleared
        service.clear_faults()

    GET /weather?city=杭州   200 {"city": "杭州", "city_en": "Hangzhou", "condition": "light rain",
                                  "condition_zh": "小雨", "temperature_c": 22, "humidity_pct": 85,
                                  "wind": "east wind, force 2", "observed_at": "2026-06-30T19:00:00"}
                            404 {"error": "unknown city: ...", "known_cities": [...]}
                            400 {"error": "..."} without ?city=
    GET /forecast?city=北京&date=2026-07-01                 (lesson 21's reminder loop; lesson 15 never calls it)
                            200 {"city": "北京", "city_en": "Beijing", "date": "2026-07-01", "hours": [{"hour": "08:00",
                                  "condition": "cloudy", "condition_zh": "多云", "rain_chance_pct": 10}, ...]}
                                 (hour by hour, 08:00 to 21:00, for the service's today and tomorrow; lesson 21)
                            404 {"error": "no forecast for ...", "dates": [today, tomorrow]}
    GET /health             200 {"ok": true}
    any GET                 400 {"error": ...} with two Host, Sec-Fetch-Site or Origin headers
                            403 {"error": ...} from a web page of another site (its browser's Sec-Fetch-Site or Origin
                                 says so; programs send neither), before any fault is used up
    any request             400 {"error": ...} for a head RFC 9112 refuses (a header line that is no Name: value, a
                                 line break in a value, no HTTP version: hosting/request_heads.py)
                            421 {"error": ...} for a Host it does not answer for, when given `hosts` (a target that is
                                 a whole URL, GET http://host/weather, names its host instead: RFC 9112 §3.2.2)
    any request             503 {"error": ...} with Retry-After: 1 while it serves as many connections as it may
                                 (connection_cap(): a quarter of the process's file descriptors); a request not
                                 whole 30 s after its connection opened is dropped unanswered

The faults (`inject`), each for the next `times` requests or until `clear_faults()` (every GET from a Host it answers
counts, whichever path it asks for; a 400, 421 or 403 above does not):

    delay_s       wait this long before answering (a slow upstream); stop() cuts the wait short
    status        answer with this HTTP status and a JSON error body (503, 429, 500, ...)
    body          "not_json" (an HTML page, with 200), "wrong_shape" (JSON without the weather fields),
                  "huge" (a valid reply padded to several megabytes), "trickle" (a valid reply sent 16 bytes
                  at a time, 0.1 s apart: no wait is long, the whole reply is), "drop" (close without
                  answering); all but "drop" change only a /weather reply that would have succeeded

`python -m tinyagent weather-service` serves it in the foreground until Ctrl-C or SIGTERM (even when
started with SIGINT ignored: hosting/signals.py); `--delay` and `--status` set a fault for every request.
"""

from __future__ import annotations

import json
import selectors
import sys
import threading
from dataclasses import dataclass
from datetime import timedelta
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tinyagent.clock import Clock, fixed_clock
from tinyagent.hosting.request_heads import HeadCheckingHandler, HeadReader, host_name, other_site
from tinyagent.hosting.signals import StopSignals
from tinyagent.hosting.slow_clients import CLIENT_GONE, EndingGently, RequestClock, connection_cap
from tinyagent.hosting.threaded_server import BackgroundServer
from tinyagent.number_checks import check_whole

# The course's day (lesson 00); a service started without a clock reports this moment, so every run of a
# notebook prints the same reports. Pass `clock=system_clock` for the real time.
COURSE_CLOCK = fixed_clock("2026-06-30T19:00:00")
HUGE_BYTES = 5 * 1024 * 1024  # a "huge" reply: far beyond any sane weather report
MAX_DELAY_S = 3600  # a slow upstream's longest wait (`--delay` has the same bound); longer overflows a lock's wait
BODIES = ("json", "not_json", "wrong_shape", "huge", "trickle", "drop")
# A refused connection is read after its 503 until its client closes it, this long and this much at most: a GET's
# head is far less (http.server reads lines of 64 KiB at most).
REFUSAL_SECONDS = 5.0
REFUSAL_BYTES = 1024 * 1024
# "trickle": 16 bytes every 0.1 s, so a report (about 210 bytes) takes about 1.3 s
TRICKLE_PIECE, TRICKLE_PAUSE_S = 16, 0.1
LOGGED_CHARS = 300  # of each piece of a logged line (a request line is the client's, up to 64 KiB)


@dataclass(frozen=True)
class CityWeather:
    """One city's weather, in Chinese and English."""

    zh: str
    en: str
    condition_zh: str
    condition_en: str
    temperature_c: int
    humidity_pct: int
    wind: str

    def report(self, observed_at: str) -> dict:
        return {
            "city": self.zh,
            "city_en": self.en,
            "condition": self.condition_en,
            "condition_zh": self.condition_zh,
            "temperature_c": self.temperature_c,
            "humidity_pct": self.humidity_pct,
            "wind": self.wind,
            "observed_at": observed_at,
        }


# A fixed table, so a lesson prints the same weather on any day. Hangzhou rains (the umbrella question has
# a "yes"), Beijing is sunny (a "no").
CITIES = (
    CityWeather("北京", "Beijing", "晴", "sunny", 28, 40, "south wind, force 2"),
    CityWeather("上海", "Shanghai", "多云", "cloudy", 27, 70, "south-east wind, force 3"),
    CityWeather("杭州", "Hangzhou", "小雨", "light rain", 22, 85, "east wind, force 2"),
    CityWeather("广州", "Guangzhou", "雷阵雨", "thunderstorms", 31, 82, "south wind, force 3"),
    CityWeather("深圳", "Shenzhen", "阴", "overcast", 30, 75, "south-west wind, force 2"),
    CityWeather("成都", "Chengdu", "阴", "overcast", 25, 78, "north wind, force 1"),
    CityWeather("南京", "Nanjing", "中雨", "moderate rain", 24, 88, "north-east wind, force 3"),
    CityWeather("London", "London", "小雨", "drizzle", 16, 80, "west wind, force 3"),
)


# Lesson 21's forecast: each city's weather now, all day; tomorrow, a city in FORECAST_DRY has that weather instead
# (Beijing: cloudy), and a day's hours of its own (FORECAST_CHANGES) come first. Tomorrow in Beijing has a thunder
# shower in the afternoon, so a meeting then needs an umbrella and one in the morning does not.
FORECAST_HOURS = range(8, 22)
FORECAST_CHANGES = {("北京", 1): {hour: ("雷阵雨", "thundershowers", 80) for hour in range(14, 18)}}
FORECAST_DRY = {"北京": (("多云", "cloudy", 10),)}


def forecast(city: CityWeather, days_ahead: int) -> list[dict]:
    """`city`'s weather hour by hour (FORECAST_HOURS), `days_ahead` days from the service's today (0 or 1)."""
    dry = FORECAST_DRY.get(city.zh, ((city.condition_zh, city.condition_en, 10),))[0]
    changes = FORECAST_CHANGES.get((city.zh, days_ahead), {})
    hours = []
    for hour in FORECAST_HOURS:
        zh, en, chance = changes.get(hour, dry if days_ahead else (city.condition_zh, city.condition_en, 10))
        hours.append({"hour": f"{hour:02d}:00", "condition": en, "condition_zh": zh, "rain_chance_pct": chance})
    return hours


def find_city(name: str) -> CityWeather | None:
    """The city called `name` (Chinese or English, any case, with or without 市/city), or None."""
    key = name.strip().lower().removesuffix(" city").removesuffix("市").strip()
    return next((city for city in CITIES if key in (city.zh.lower(), city.en.lower())), None)


@dataclass
class Fault:
    """What the service does wrong, for how many more requests (None: until cleared)."""

    delay_s: float = 0.0
    status: int | None = None
    body: str = "json"
    times: int | None = None


class _Handler(HeadCheckingHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: nothing idle to clean up at stop()
    server_version = "tinyagent-weather/1"
    # A client that stalls (half a request line, headers never ended, or a header byte every few seconds) is
    # dropped once its connection has been open this long without a whole request: without it, each such
    # connection held a thread and a file descriptor for ever.
    timeout = 30

    def setup(self) -> None:
        super().setup()
        # A socket timeout bounds one wait only, so the request is read through a clock that bounds them all,
        # started now; past it a read raises TimeoutError, and the base class closes the connection.
        self.rfile.close()
        clock = RequestClock(self.connection, self.timeout)
        clock.start()
        self.rfile = HeadReader(clock)

    def handle(self) -> None:
        if not self.refused_tls_hello():
            super().handle()

    def do_GET(self) -> None:
        service = self.server.service
        # Read first-wins, a second Host could name what a proxy in front, reading the last, would refuse.
        for name in ("Host", "Sec-Fetch-Site", "Origin"):
            if len(sent := self.headers.get_all(name) or []) > 1:
                return self._send(400, {"error": f"a request may carry one {name} header, not {len(sent)}"})
        if service.hosts is not None and host_name(self.authority()) not in map(host_name, service.hosts):
            return self._send(421, {"error": f"this service answers only for {', '.join(service.hosts)}"})
        # A page on any site can make the browser send a GET here (an <img>); it must not use up a fault a lesson
        # injected for its own next call. Programs (requests, the lesson's tool) send neither header.
        sender = other_site(self.headers.get("Sec-Fetch-Site"), self.headers.get("Origin"), self.authority())
        if sender is not None:
            return self._send(403, {"error": f"a request from {sender} is refused: call this service from a program"})
        fault = service._take_fault()
        service._count_request()
        if fault.delay_s and service._stopping.wait(fault.delay_s):
            return  # the service is stopping: give up on this request without a reply
        if fault.body == "drop":
            self.close_connection = True
            return  # the handler returns without a byte written: the client sees the connection close
        if fault.status is not None:
            return self._send(fault.status, {"error": f"the weather service is failing on purpose ({fault.status})"})
        try:
            url = urlsplit(self.path)
        except ValueError:  # an absolute-form target whose host urlsplit cannot read: "http://[/weather"
            return self._send(400, {"error": f"the request target {self.path[:80]!r} is not a URL it reads"})
        if url.path == "/health":
            return self._send(200, {"ok": True})
        if url.path == "/forecast":  # lesson 21's route (FORECAST_HOURS); lesson 15's tool asks /weather only
            return self._forecast(parse_qs(url.query))
        if url.path != "/weather":
            return self._send(404, {"error": f"no such endpoint: {url.path[:80]}; try /weather?city=杭州"})
        cities = parse_qs(url.query).get("city", [])
        if not cities or not cities[0].strip():
            return self._send(400, {"error": "the query needs a city, e.g. /weather?city=杭州"})
        city = find_city(cities[0])
        if city is None:
            return self._send(404, {"error": f"unknown city: {cities[0][:40]}",
                                    "known_cities": [c.zh for c in CITIES]})
        if fault.body == "not_json":  # a login page or a proxy's notice, served with 200 as they often are
            page = b"<html><body><h1>Please sign in to continue</h1></body></html>"
            return self._send_raw(200, page, "text/html; charset=utf-8")
        if fault.body == "wrong_shape":
            return self._send(200, {"status": "1", "info": "OK", "lives": []})  # another API's shape
        report = service.report(city)
        if fault.body == "huge":
            return self._send_huge(json.dumps(report, ensure_ascii=False).encode("utf-8"))
        if fault.body == "trickle":
            return self._trickle(json.dumps(report, ensure_ascii=False).encode("utf-8"))
        return self._send(200, report)

    def _forecast(self, query: dict) -> None:
        """GET /forecast, for lesson 21's reminder loop: a city's hours today or tomorrow (see `forecast`)."""
        city = find_city((query.get("city") or [""])[0])
        if city is None:
            return self._send(404, {"error": f"unknown city: {(query.get('city') or [''])[0][:40]}",
                                    "known_cities": [c.zh for c in CITIES]})
        today = self.server.service.clock().date()
        dates = [(today + timedelta(days=n)).isoformat() for n in (0, 1)]
        asked = (query.get("date") or [dates[0]])[0].strip()
        if asked not in dates:
            return self._send(404, {"error": f"no forecast for {asked[:20]}: only today and tomorrow", "dates": dates})
        return self._send(200, {"city": city.zh, "city_en": city.en, "date": asked,
                                "hours": forecast(city, dates.index(asked))})

    def _trickle(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for start in range(0, len(body), TRICKLE_PIECE):
            if self.server.service._stopping.wait(TRICKLE_PAUSE_S):
                return
            self.wfile.write(body[start : start + TRICKLE_PIECE])
            self.wfile.flush()

    def _send_huge(self, body: bytes) -> None:
        """The report with HUGE_BYTES of padding in it, its headers first and the body in pieces: built whole before the
        headers, 5 MB of JSON took long enough on a loaded machine to look like a server that does not answer."""
        head, tail, piece = body[:-1] + b', "padding": "', b'"}', b"x" * 65536
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(head) + HUGE_BYTES + len(tail)))
        self.end_headers()
        try:
            self.wfile.write(head)
            for _ in range(HUGE_BYTES // len(piece)):
                self.wfile.write(piece)
            self.wfile.write(tail)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading at its limit, as a careful one does

    def do_POST(self) -> None:
        self._send(405, {"error": "only GET is served here"})

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = do_POST

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a method it does not know, a malformed request line or header,
        one too long) in this API's JSON, not its HTML page."""
        self.close_connection = True
        # A garbled request line leaves the base class taking it for HTTP/0.9, whose answers have no status line or
        # headers: answer as HTTP/1.0 all the same (classroom/server.py's send_error does the same).
        if self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.0"
        self._send(code, {"error": message or HTTPStatus(code).phrase})

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self._send_raw(status, body, "application/json; charset=utf-8")

    def _send_raw(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":  # a reply to HEAD has headers only
            self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        if self.server.service.verbose:
            # The request line is the client's, as long as it likes (64 KiB): a long one is cut, or each request
            # could write that much to the terminal.
            shown = tuple(arg[:LOGGED_CHARS] + "..." if isinstance(arg, str) and len(arg) > LOGGED_CHARS else arg
                          for arg in args)
            # Its control characters (a line break, an escape that recolours a terminal) are written as \x.. escapes,
            # with the table the standard library's own log_message uses.
            message = (format % shown).translate(self._control_char_table)
            sys.stderr.write(f"weather-service: {message}\n")


class _Server(ThreadingHTTPServer):
    """A thread per connection, at most connection_cap() at once (a quarter of the process's file descriptors): a
    connection past that gets a 503, so clients that hold connections open cannot take every descriptor, after
    which the process could accept nobody. The refused connection is then read until its client closes it
    (EndingGently: REFUSAL_SECONDS, REFUSAL_BYTES at most, and as many at once as the cap), each time the serving
    loop looks up (every poll_interval: 0.2 s for WeatherService): closed at once, the request's bytes still to come
    made a reset, which could take the 503 with it."""

    daemon_threads = True  # a request still being served never keeps the process alive
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], service: WeatherService):
        self.service = service
        cap = connection_cap()
        self.threads_free = threading.BoundedSemaphore(cap)
        self._refused = selectors.DefaultSelector()
        self._ending = EndingGently(self._refused, cap, REFUSAL_SECONDS, REFUSAL_BYTES)
        super().__init__(address, _Handler)

    def verify_request(self, request, client_address) -> bool:
        """Whether the connection gets a thread; if not, it is answered with a 503 here and ended gently."""
        if self.threads_free.acquire(blocking=False):
            return True
        body = json.dumps({"error": "the weather service is serving as many connections as it may: try again in "
                                    "a moment"}).encode()
        try:
            # What the client has sent is read first, without waiting for more: nothing here may wait on a client.
            request.setblocking(False)
            request.recv(65536)
        except OSError:  # nothing has arrived yet, or the client has gone
            pass
        try:
            request.send(b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: "
                         b"%d\r\nRetry-After: 1\r\n\r\n%s" % (len(body), body))  # a new connection's buffer takes it
        except OSError:
            return False  # the client has gone: the server closes it
        self._ending.add(request)
        return False

    def shutdown_request(self, request) -> None:
        if request not in self._ending:  # a refused one is closed by EndingGently
            super().shutdown_request(request)

    def service_actions(self) -> None:
        # The serving loop calls this each time it looks up (a connection came, or poll_interval passed).
        for key, _ in self._refused.select(0):
            self._ending.read(key.fileobj)
        self._ending.close_overdue()

    def server_close(self) -> None:
        super().server_close()
        self._ending.__exit__(None, None, None)
        self._refused.close()

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.threads_free.release()

    def handle_error(self, request, client_address) -> None:
        # A client that hung up mid-reply (its timeout, its size cap) is normal here: no traceback.
        if not isinstance(sys.exc_info()[1], CLIENT_GONE):
            super().handle_error(request, client_address)


class WeatherService(BackgroundServer):
    """The weather API on an HTTP server; see the module docstring.

    host, port: where to listen (port 0: any free port; the port is known once the object exists)
    clock:      what "observed_at" says (default: the course's day, so outputs never change)
    verbose:    log each request to stderr
    hosts:      the Host names it answers for, others 421 (a page another site points its own name at: DNS
                rebinding); None (the default) answers any
    """

    thread_name = "weather-service"
    poll_interval = 0.2

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, clock: Clock = COURSE_CLOCK,
                 verbose: bool = False, hosts: tuple[str, ...] | None = None):
        self.host = host
        self.clock = clock
        self.verbose = verbose
        self.hosts = hosts
        self.requests = 0  # GETs answered for an allowed Host, faulty ones included: a retry shows up here
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._stopping = threading.Event()
        self._listen(host, port, lambda address: _Server(address, self))

    # -- where it is -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1"}.get(self.host, self.host)
        return f"http://{host}:{self.port}"

    def url(self, path: str = "/weather") -> str:
        return self.base_url + path

    def report(self, city: CityWeather) -> dict:
        """What GET /weather answers for `city`. A hook for lesson 25: its planted page (defences/planting.py)
        overrides it to put an instruction in the report."""
        return city.report(self.clock().isoformat(timespec="seconds"))

    # -- misbehaving on purpose ------------------------------------------------------------------
    def inject(self, *, delay_s: float = 0.0, status: int | None = None, body: str = "json",
               times: int | None = None) -> None:
        """Misbehave for the next `times` requests (None: until `clear_faults()`). Faults queue up in order.
        Every GET uses one up, but a `body` fault other than "drop" changes only a successful /weather reply."""
        if body not in BODIES:
            raise ValueError(f"body must be one of {', '.join(BODIES)}, got {body!r}")
        if status is not None and not (isinstance(status, int) and 100 <= status <= 599):
            raise ValueError(f"status must be an HTTP status from 100 to 599, got {status!r}")
        if isinstance(delay_s, bool) or not isinstance(delay_s, (int, float)) or not 0 <= delay_s <= MAX_DELAY_S:
            raise ValueError(f"delay_s must be a number of seconds from 0 to {MAX_DELAY_S}, got {delay_s!r}")
        if times is not None:
            check_whole("times", times, also="or None")
        with self._lock:
            self._faults.append(Fault(float(delay_s), status, body, times))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self) -> Fault:
        """The fault for this request (a plain reply when there is none), counting down its `times`."""
        with self._lock:
            if not self._faults:
                return Fault()
            fault = self._faults[0]
            if fault.times is not None:
                fault.times -= 1
                if fault.times == 0:
                    self._faults.pop(0)
            return Fault(fault.delay_s, fault.status, fault.body)

    def _count_request(self) -> None:
        with self._lock:
            self.requests += 1

    # -- running (start, serve_forever, with: hosting/threaded_server.py) --------------------------------
    def stop(self) -> None:
        """Stop serving and free the port; a slow request in progress is cut short. Safe to call twice."""
        self._stopping.set()
        super().stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped" if self._closed else "not started"
        return f"<WeatherService {state}, {len(CITIES)} cities>"  # no port: it changes run to run


def serve_weather(host: str = "127.0.0.1", port: int = 8081, *, delay_s: float = 0.0,
                  status: int | None = None) -> str:
    """`python -m tinyagent weather-service`: serve in the foreground until Ctrl-C or SIGTERM."""
    with StopSignals() as stop:  # before the banner: a Ctrl-C right after it must not be lost
        # Only its own names: a page on another site that points its name at 127.0.0.1 (DNS rebinding) gets 421.
        service = WeatherService(host, port, verbose=True, hosts=("127.0.0.1", "localhost", "[::1]"))
        if delay_s or status is not None:
            service.inject(delay_s=delay_s, status=status)
        print(f"weather service on {service.url('/weather')}?city=杭州", flush=True)
        print(f"cities: {', '.join(city.en for city in CITIES)}. Press Ctrl-C to stop.", flush=True)
        stopped_by = service.serve_forever(stop)
    print(f"weather service stopped ({stopped_by}).", file=sys.stderr)
    return stopped_by
