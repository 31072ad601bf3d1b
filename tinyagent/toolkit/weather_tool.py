"""`getWeather`: the third article's weather tool, on lesson 07's `@tool` and http_tool.py's `JsonApi`.

    tool = weather_tool(service.base_url, read_timeout=1.0)
    tool.invoke("杭州")   -> {"city":"杭州","city_en":"Hangzhou","condition":"light rain","condition_zh":"小雨",...}
    (service slow)        -> {"error":"getWeather: the weather API did not answer within 1 s","kind":"timeout",
                              "retryable":true}

The tool reads only the fields of `WEATHER_SHAPE` and passes exactly those on: a field the service adds
later changes nothing; a required field it drops (city, condition, condition_zh, temperature_c) is a `bad_shape`
error rather than a `None` in the model's answer, and an optional one it drops is left out of the Observation.
"""

from typing import Annotated

from tinyagent.toolkit.http_tool import ApiCallFailed, JsonApi
from tinyagent.toolkit.typed_tool import TypedTool, tool

# What the tool needs from a reply; anything else in it is ignored.
WEATHER_SHAPE = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "city_en": {"type": "string"},
        "condition": {"type": "string"},
        "condition_zh": {"type": "string"},
        "temperature_c": {"type": "number"},
        "humidity_pct": {"type": "number"},
        "wind": {"type": "string"},
        "observed_at": {"type": "string"},
    },
    "required": ["city", "condition", "condition_zh", "temperature_c"],
}
MAX_CITY_CHARS = 40


def weather_tool(base_url: str, *, connect_timeout: float = 2.0, read_timeout: float = 5.0,
                 total_timeout: float = 10.0, max_bytes: int = 64 * 1024, name: str = "getWeather") -> TypedTool:
    """The weather tool, calling the weather API at `base_url` (a `WeatherService`, or one shaped like it)."""
    api = JsonApi(base_url, name="the weather API", connect_timeout=connect_timeout, read_timeout=read_timeout,
                  total_timeout=total_timeout, max_bytes=max_bytes)

    @tool(
        name=name,
        descriptions={"zh": "查询一个城市现在的天气（天气状况、气温、湿度、风）。"},
        param_descriptions={"zh": {"city": "城市名，中文或英文均可，如 杭州"}},
        read_only=True,  # a GET: the service's weather is read, never changed
    )
    def get_weather(city: Annotated[str, {"minLength": 1, "maxLength": MAX_CITY_CHARS}]) -> dict | str:
        """The weather now in one city: condition, temperature, humidity and wind.

        Args:
            city: the city's name, in Chinese or English, e.g. 杭州
        """
        try:
            report = api.get("/weather", {"city": city.strip()}, shape=WEATHER_SHAPE)
        except ApiCallFailed as failure:
            return failure.observation(name)
        return {key: report[key] for key in WEATHER_SHAPE["properties"] if key in report}

    get_weather.api = api  # for a lesson to show (and a test to change) the limits
    return get_weather
