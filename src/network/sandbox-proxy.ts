/**
 * How a sandbox with internet access reaches its gate, as both backends set it
 * up: the gate's unix socket is bound in at GATE_SOCKET_MOUNT, the supervisor's
 * forwarder listens on 127.0.0.1:PROXY_PORT inside the sandbox's own network
 * namespace (loopback only, no route), and the usual clients are pointed at it.
 */

/** Where the session's gate socket appears inside the sandbox. */
export const GATE_SOCKET_MOUNT = '/run/sandcell/gate.sock';
/** The forwarder's port on the sandbox's own loopback (3128: the conventional proxy port). */
export const PROXY_PORT = 3128;
/**
 * The CA bundle inside the sandbox: the system's certificates plus the session's trusted ones. Not
 * under /etc/ssl, which the sandbox does not have: only sandboxes with network get a bundle.
 */
export const CERTIFICATE_BUNDLE = '/run/sandcell/ca-certificates.crt';

/** What the supervisor reads from its options to start the forwarder. */
export function forwarderOptions(): { socket: string; port: number } {
  return { socket: GATE_SOCKET_MOUNT, port: PROXY_PORT };
}

/**
 * The environment that points the usual tools at the forwarder: curl, requests, urllib, pip and git
 * (libcurl reads the lower-case names) and npm (its own config names). A client that reads none of
 * them fails at once rather than hangs: the sandbox has no resolver and no route. `NO_PROXY` keeps the
 * sandbox's own loopback direct; the host's loopback is `host.sandcell.internal`, which goes through the
 * proxy like any name (clients match NO_PROXY entries as domain suffixes, and none of these is one of it).
 */
export function proxyEnvironment(): Record<string, string> {
  const proxy = `http://127.0.0.1:${PROXY_PORT}`;
  const noProxy = 'localhost,127.0.0.1,::1';
  return {
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    ALL_PROXY: proxy,
    all_proxy: proxy,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    npm_config_proxy: proxy,
    npm_config_https_proxy: proxy,
    PIP_PROXY: proxy,
    SSL_CERT_FILE: CERTIFICATE_BUNDLE,
    REQUESTS_CA_BUNDLE: CERTIFICATE_BUNDLE,
    CURL_CA_BUNDLE: CERTIFICATE_BUNDLE,
    PIP_CERT: CERTIFICATE_BUNDLE,
    GIT_SSL_CAINFO: CERTIFICATE_BUNDLE,
    NODE_EXTRA_CA_CERTS: CERTIFICATE_BUNDLE,
    npm_config_cafile: CERTIFICATE_BUNDLE,
    // npm's cache under HOME would be the session's files when HOME is /home/user (E2B's commands).
    npm_config_cache: '/tmp/.npm',
  };
}

/**
 * What a sandbox without network gets instead: pip looks at no index, so installing a package that
 * is not there says "No matching distribution" at once rather than failing to find a CA bundle (an
 * offline sandbox has none) or retrying a network it does not have; local wheels still install.
 */
export function offlineEnvironment(): Record<string, string> {
  return { PIP_NO_INDEX: '1' };
}
