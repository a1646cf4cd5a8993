/**
 * `--allow-host`: the hosts a CLI session may reach over HTTP and HTTPS through its gate (repeatable,
 * or comma-separated). Without it a session has no network, as always.
 */
import type { Command } from 'commander';
import { InvalidInputError } from '../errors.js';
import type { NetworkOption } from '../network/network-option.js';
import { resolveNetworkOption } from '../network/network-option.js';
import { checkNetworkSecret } from '../network/network-secret.js';
import type { ServerOptions } from '../server/core/options.js';
import type { SessionOptions } from '../session/options.js';
import { CliExit, EXIT_USAGE } from './exit-codes.js';
import { collectSecretHeaders, readSecretHeaders, SECRET_HEADER_HELP } from './secret-header.js';

export interface NetworkCliOptions {
  allowHost?: string[];
  allowPackageIndex?: boolean;
  secretHeader?: string[];
}

export const ALLOW_PACKAGE_INDEX_HELP =
  "let the session reach the Python package index this machine's pip is configured for, through its gate, so `pip install` works in it";

export const ALLOW_HOST_HELP =
  'a host the session may reach over HTTP(S) through its gate, e.g. pypi.org, *.example.com, api.example.com:8443 (repeatable); default: no network';

export function collectHosts(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((host) => host.trim())].filter((host) => host !== '');
}

export function addNetworkOption(command: Command): Command {
  return command
    .option('--allow-host <host>', ALLOW_HOST_HELP, collectHosts)
    .option('--allow-package-index', ALLOW_PACKAGE_INDEX_HELP)
    .option('--secret-header <host:header=source>', SECRET_HEADER_HELP, collectSecretHeaders);
}

/** The allow-list the flags give, checked now: a typo is a usage error before any sandbox starts. */
export function allowedHosts(flag: string, hosts: string[] | undefined): string[] | undefined {
  if (!hosts || hosts.length === 0) return undefined;
  return asUsageError(flag, () => resolveNetworkOption({ allow: hosts })?.allow);
}

export function networkSessionOptions(options: NetworkCliOptions): Pick<SessionOptions, 'network'> {
  const allow = allowedHosts('--allow-host', options.allowHost);
  const packageIndex = options.allowPackageIndex === true;
  const secrets = readSecretHeaders('--secret-header', options.secretHeader);
  if (secrets && !allow) throw new CliExit(EXIT_USAGE, '--secret-header needs --allow-host naming its host.');
  if (!allow && !packageIndex) return {};
  const network = asUsageError(packageIndex ? '--allow-package-index' : '--secret-header', () =>
    resolveNetworkOption({
      allow: allow ?? [],
      ...(packageIndex ? { packageIndex } : {}),
      ...(secrets ? { secrets } : {}),
    }),
  );
  return network ? { network } : {};
}

function asUsageError<T>(flag: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof InvalidInputError) throw new CliExit(EXIT_USAGE, `${flag}: ${error.message}`);
    throw error;
  }
}

/**
 * serve's flags: `--allow-host` is every session's default and part of what keys may ask for;
 * `--permit-host` adds to what they may ask for (`any`: anything). Neither: no network, none permitted.
 * `--secret-header` is the operator's: every session whose allow-list covers its host gets it.
 */
export function serveNetworkOptions(options: {
  allowHost?: string[];
  allowPackageIndex?: boolean;
  permitHost?: string[];
  secretHeader?: string[];
}): Pick<ServerOptions, 'networkPermission' | 'networkSecrets'> & { network?: NetworkOption } {
  const secrets = readSecretHeaders('--secret-header', options.secretHeader);
  if (secrets) {
    for (const secret of secrets) asUsageError('--secret-header', () => checkNetworkSecret(secret));
  }
  return { ...serveAllowOptions(options), ...(secrets ? { networkSecrets: secrets } : {}) };
}

function serveAllowOptions(options: {
  allowHost?: string[];
  allowPackageIndex?: boolean;
  permitHost?: string[];
}): Pick<ServerOptions, 'networkPermission'> & { network?: NetworkOption } {
  const hosts = allowedHosts('--allow-host', options.allowHost) ?? [];
  // The index's hosts join the default like --allow-host's; sessions' pip is pointed at it by packageIndex.
  const indexed = options.allowPackageIndex
    ? asUsageError('--allow-package-index', () => resolveNetworkOption({ allow: hosts, packageIndex: true }))
    : undefined;
  const allow = indexed?.allow ?? hosts;
  const defaultNetwork = (): NetworkOption => ({ allow, ...(indexed ? { packageIndex: true } : {}) });
  if (options.permitHost?.includes('any')) {
    return { networkPermission: 'any', ...(allow.length > 0 ? { network: defaultNetwork() } : {}) };
  }
  const permit = allowedHosts('--permit-host', options.permitHost) ?? [];
  const permitted = [...new Set([...allow, ...permit])];
  return {
    ...(permitted.length > 0 ? { networkPermission: permitted } : {}),
    ...(allow.length > 0 ? { network: defaultNetwork() } : {}),
  };
}
