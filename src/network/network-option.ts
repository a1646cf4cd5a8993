/**
 * A session's `network` option: `'none'` (the default: no network at all, as
 * strong as a sandcell without this feature), or an allow-list the session's
 * gate enforces. The rules' meaning (exact names, `*.suffix`, CIDRs, ports) is
 * the gate's policy (policy.ts), which reads them here too, so a bad one fails
 * when the options are read, before anything starts.
 */
import { InvalidInputError } from '../errors.js';
import { checkNetworkSecrets, type NetworkSecret } from './network-secret.js';
import { hostPackageIndex } from './package-index.js';
import { parseNetworkPolicy, refuseHostLocalRules } from './policy.js';

export interface NetworkAllowList {
  /**
   * Hosts the session may reach through its gate: `pypi.org`, `*.example.com`, `api.example.com:443`,
   * `10.0.0.0/8`; a service on this machine's loopback as `host.sandcell.internal:PORT` (127.0.0.1 and
   * localhost are the sandbox's own loopback, so rules on them are refused).
   */
  allow: string[];
  /**
   * Also the Python package index this machine's pip is configured for (package-index.ts): its hosts
   * are added to `allow` when the option is read, and the sandbox's pip is pointed at it.
   */
  packageIndex?: boolean;
  /**
   * PEM certificates the sandbox trusts beside the system's (a corporate or a test CA): they are added
   * to the bundle that `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `PIP_CERT`, `NODE_EXTRA_CA_CERTS` and git name.
   */
  trustedCertificates?: string;
  /**
   * Headers the gate adds to requests for a host the allow-list covers, so a key never enters the
   * sandbox: `[{ host: 'api.example.com', header: 'Authorization', value: 'Bearer …' }]`. Over
   * HTTPS the gate ends TLS for those hosts with a certificate from the session's own authority,
   * which the sandbox trusts (and nothing else does). Values are never logged nor answered.
   */
  secrets?: NetworkSecret[];
}

export type NetworkOption = 'none' | NetworkAllowList;

export const MAX_ALLOW_RULES = 256;
export const MAX_RULE_LENGTH = 260;
export const MAX_TRUSTED_CERTIFICATE_BYTES = 1024 * 1024;
/** Names, wildcards, IPv4/IPv6 addresses and CIDRs, with an optional port: nothing else is a rule. */
const RULE = /^[A-Za-z0-9*.:[\]/_-]+$/;

/** Validates `network`; returns undefined for none, else the allow-list with its rules trimmed and lower-cased. */
export function resolveNetworkOption(option: NetworkOption | undefined): NetworkAllowList | undefined {
  if (option === undefined || option === 'none') return undefined;
  if (typeof option !== 'object' || option === null || !Array.isArray(option.allow)) {
    throw new InvalidInputError(
      "`network` is 'none' or { allow: string[], packageIndex?: boolean, trustedCertificates?, secrets? }.",
    );
  }
  if (option.packageIndex !== undefined && typeof option.packageIndex !== 'boolean') {
    throw new InvalidInputError('`network.packageIndex` is true or false.');
  }
  const packageIndex = option.packageIndex === true;
  if (option.allow.length === 0 && !packageIndex)
    throw new InvalidInputError("`network.allow` is empty: use `network: 'none'` for no network.");
  if (option.allow.length > MAX_ALLOW_RULES) {
    throw new InvalidInputError(`\`network.allow\` holds ${option.allow.length} rules; at most ${MAX_ALLOW_RULES}.`);
  }
  const asked = packageIndex ? [...option.allow, ...hostPackageIndex().rules] : option.allow;
  const allow = asked.map((rule) => {
    const trimmed = typeof rule === 'string' ? rule.trim().toLowerCase() : '';
    if (trimmed.length === 0 || trimmed.length > MAX_RULE_LENGTH || !RULE.test(trimmed) || trimmed.includes('//')) {
      throw new InvalidInputError(
        `\`network.allow\` holds ${JSON.stringify(rule)}: a rule is a host name, \`*.suffix\`, an address or a CIDR, with an optional \`:port\`.`,
      );
    }
    return trimmed;
  });
  // The gate's own parser: a rule it would refuse when the channel opens fails now, with its message.
  const policy = parseNetworkPolicy(allow);
  // And a rule the gate would take but no sandbox could use: this host's loopback is host.sandcell.internal.
  refuseHostLocalRules(policy);
  const secrets = option.secrets === undefined ? undefined : checkNetworkSecrets(option.secrets, policy);
  const certificates = option.trustedCertificates;
  if (certificates !== undefined) {
    if (
      typeof certificates !== 'string' ||
      !certificates.includes('-----BEGIN CERTIFICATE-----') ||
      Buffer.byteLength(certificates) > MAX_TRUSTED_CERTIFICATE_BYTES ||
      certificates.includes('\0')
    ) {
      throw new InvalidInputError('`network.trustedCertificates` must be PEM certificates, at most 1 MiB.');
    }
  }
  return {
    allow: [...new Set(allow)],
    ...(packageIndex ? { packageIndex } : {}),
    ...(certificates !== undefined ? { trustedCertificates: certificates } : {}),
    ...(secrets !== undefined && secrets.length > 0 ? { secrets } : {}),
  };
}
