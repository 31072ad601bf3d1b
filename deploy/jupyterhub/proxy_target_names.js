// Loaded by the hub's proxy before it starts (jupyterhub_config.py, section 1):
//
//     node --require proxy_target_names.js configurable-http-proxy ...
//
// The proxy reaches each learner's server and the classroom model over TLS (JupyterHub's internal_ssl) and must check
// that the certificate is the one made for the address it connects to. Node's HTTPS client checks it against another
// name: the request's Host header, whenever that holds a name rather than an IP address (and sends it as SNI). A
// browser that opened the hub as http://localhost:8000, by the machine's name, or through a web server in front that
// passes the public name on, sends that name, which no certificate of the room holds (each names its server's address
// alone: learner_accounts.py), so every request past the hub's own pages was a 503 (ERR_TLS_CERT_ALTNAME_INVALID).
// An agent's servername "" is never replaced by the Host's name, and Node then checks the certificate against the
// address of the route's target, whatever name the browser used. The proxy makes its agents once, at its start.
"use strict";
const https = require("https");

https.Agent = class TargetAddressAgent extends https.Agent {
  constructor(options) {
    super({ ...options, servername: "" });
  }
};
