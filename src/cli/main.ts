/** The `sandcell` command line. */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { SandcellError } from '../errors.js';
import { LANGUAGES } from '../session/languages.js';
import { closeLocalVolumes } from '../volumes/local-volumes.js';
import { addAgentOptions, addModelOptions, KEYS_HELP } from './agent-flags.js';
import { addBackendOptions } from './backend-option.js';
import { addDiscordOptions } from './discord-flags.js';
import { doctorCommand } from './doctor-command.js';
import { execErrorText } from './exec-usage.js';
import { CliExit, EXIT_SANDBOX_FAILURE, EXIT_USAGE } from './exit-codes.js';
import { imageBuildCommand, imagePruneCommand, imageStatusCommand } from './image-command.js';
import { addLimitOptions } from './limit-options.js';
import { LOG_FORMATS } from './log-lines.js';
import { addNetworkOption, collectHosts } from './network-options.js';
import { red } from './render.js';
import { replCommand } from './repl-command.js';
import { runCommand } from './run-command.js';
import { collectSecretHeaders } from './secret-header.js';
import { UNITS_HELP } from './unit-flags.js';
import { addVolumeOption } from './volume-options.js';

const DEFAULT_OUTPUT_DIR = 'sandcell-output';
/** The session's default time limit (DEFAULT_TIMEOUT_MS), as the flags write it. */
const DEFAULT_TIMEOUT = '1m';

function packageVersion(): string {
  const manifest = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function buildProgram(setExitCode: (code: number) => void): Command {
  const program = new Command('sandcell')
    .description('A self-hosted code interpreter: stateful, sandboxed Python sessions.')
    .version(packageVersion())
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(red(text)) });

  addBackendOptions(
    addVolumeOption(addNetworkOption(addLimitOptions(program.command('run'))))
      .description('run a script in a fresh sandboxed session (Python, JavaScript, TypeScript, bash or R)')
      .argument('[file]', 'a script (.py .js .mjs .ts .sh .R: the extension picks the language), or - for stdin')
      .option(
        '-l, --language <language>',
        `the script's language (${LANGUAGES.join(', ')}); default from the extension, else python`,
      )
      .option('-u, --upload <path>', 'copy a file into /mnt/data first (repeatable)', collect, [])
      .option('-o, --output-dir <dir>', 'where to save charts and files the code wrote', DEFAULT_OUTPUT_DIR)
      .option('-t, --timeout <duration>', `wall-clock limit for the code, e.g. 30s or 5m (default: ${DEFAULT_TIMEOUT})`)
      .option('--json', 'print the whole execution as one JSON object')
      .option(
        '--store <location>',
        'also publish each saved file to this S3 or Azure Blob store and give its signed read-only link: s3://BUCKET/PREFIX or azure://ACCOUNT/CONTAINER/PREFIX (env SANDCELL_STORE)',
      )
      .option('--link-ttl <duration>', "how long a published file's link works, at most 7d (default: 1h)")
      .addHelpText(
        'after',
        `${UNITS_HELP}\nExit codes: 0 ok, 1 error in the code (any language), 2 usage, 3 sandbox failure, 124 timeout, 130 interrupted (Ctrl-C); code that exits itself (sys.exit(n), exit n in bash): its status.`,
      ),
  ).action(async (file: string | undefined, options) => setExitCode(await runCommand(file, options)));

  addBackendOptions(
    addVolumeOption(addNetworkOption(addLimitOptions(program.command('repl'))))
      .description('an interactive prompt in a sandboxed session (Python unless --language)')
      .option('-l, --language <language>', `the prompt's language (${LANGUAGES.join(', ')})`, 'python')
      .option('-u, --upload <path>', 'copy a file into /mnt/data first (repeatable)', collect, [])
      .option('-o, --output-dir <dir>', 'where to save charts', DEFAULT_OUTPUT_DIR)
      .addOption(new Option('-t, --timeout <duration>', 'wall-clock limit per input, e.g. 30s or 5m (default: none)'))
      .addHelpText('after', UNITS_HELP),
  ).action(async (options) => setExitCode(await replCommand(options)));

  const execCommandLine = addBackendOptions(
    addVolumeOption(addNetworkOption(addLimitOptions(program.command('exec'))))
      .description("run one shell command in a fresh sandbox; its exit code is sandcell's")
      .argument('<command...>', 'the command and its arguments, after --: `sandcell exec -- ls -la`')
      .option('-u, --upload <path>', 'copy a file into /mnt/data first (repeatable)', collect, [])
      .option('-o, --output-dir <dir>', 'where to save the files the command wrote', DEFAULT_OUTPUT_DIR)
      .option(
        '-t, --timeout <duration>',
        `wall-clock limit for the command, e.g. 30s or 5m (default: ${DEFAULT_TIMEOUT})`,
      )
      .addHelpText(
        'after',
        `\nThe command runs with bash -c in /mnt/data; each argument is quoted, so it reaches the program as given.${UNITS_HELP}\nExit codes: the command's (128+N when signal N ended it), 2 usage, 3 sandbox failure, 124 timeout, 130 interrupted (Ctrl-C).`,
      ),
  );
  // `sandcell exec ls -la`: -la is the command's, not exec's; the error says to put the command after --.
  execCommandLine.configureOutput({
    outputError: (text, write) => write(red(execErrorText(text, program.args, execCommandLine.args))),
  });
  execCommandLine.action(async (words: string[], options) => {
    const { execCommand } = await import('./exec-command.js');
    setExitCode(await execCommand(words, options));
  });

  addBackendOptions(
    addVolumeOption(addNetworkOption(addLimitOptions(program.command('shell'))))
      .description("an interactive shell in a fresh sandbox, or in a running server's session (like docker exec -it)")
      .argument('[command...]', 'a program to run instead of bash, after --: `sandcell shell -- python3`')
      .option('-u, --upload <path>', 'copy a file into /mnt/data first (repeatable)', collect, [])
      .option('-o, --output-dir <dir>', 'where to save the files written in the sandbox', DEFAULT_OUTPUT_DIR)
      .option('--server <url>', "a running server's URL: the shell opens in one of its sessions (with --session)")
      .option('--session <id>', 'the session of --server to open the shell in (the key in SANDCELL_API_KEY)')
      .addHelpText(
        'after',
        `\nEvery key goes to the sandbox, Ctrl-C included (it interrupts the program there); exit or Ctrl-D ends the shell.${UNITS_HELP}\nExit codes: the shell's (128+N when signal N ended it), 2 usage, 3 sandbox failure.`,
      ),
  ).action(async (words: string[], options) => {
    const { shellCommand } = await import('./shell-command.js');
    setExitCode(await shellCommand(words, options));
  });

  addAgentOptions(
    program.command('chat').description('chat about your data: a model writes Python, sandcell runs it in a sandbox'),
  ).action(async (options) => {
    const { chatCommand } = await import('./chat-command.js');
    setExitCode(await chatCommand(options));
  });

  addAgentOptions(
    program
      .command('ask')
      .description('one question about your data, non-interactive (for scripts)')
      .argument('<question>', 'the question')
      .option('--json', 'print one JSON object: the answer, the code that ran, outputs and files'),
  )
    .addHelpText(
      'after',
      'Exit codes: 0 answered, 1 gave up or hit the step limit, 2 usage, 3 sandbox failure, 4 model failure.',
    )
    .action(async (question: string, options) => {
      const { askCommand } = await import('./ask-command.js');
      setExitCode(await askCommand(question, options));
    });

  addDiscordOptions(
    program
      .command('discord')
      .description('answer questions about data in Discord: each thread or DM gets its own sandbox'),
  ).action(async (options) => {
    const { discordCommand } = await import('./discord-command.js');
    setExitCode(await discordCommand(options));
  });

  program
    .command('doctor')
    .description('check that this machine can run sandboxes, and say what to fix')
    .option('--json', 'print the checks as JSON')
    .addOption(
      new Option(
        '-b, --backend <name>',
        'check only this backend (Docker and gVisor problems are warnings unless it is named)',
      ).choices(['bubblewrap', 'docker', 'gvisor']),
    )
    .option('--rootfs <dir>', 'check bubblewrap on a runtime root filesystem (`runtime`: the built one)')
    .option('--store <location>', 'check the store `sandcell serve --store` would use (env SANDCELL_STORE)')
    .action(async (options) => setExitCode(await doctorCommand(options)));

  addModelOptions(
    addBackendOptions(
      program
        .command('serve')
        .description('serve sessions over HTTP: the web UI at /, REST /v1, Azure dynamic sessions /azure, MCP /mcp')
        .option('--host <address>', 'address to listen on; without API keys only loopback (env SANDCELL_HOST)')
        .option('-p, --port <port>', 'port, 0 for any free one (default: 8080, env SANDCELL_PORT)')
        .option(
          '--api-key <key>',
          'accept this Bearer key, as key or name:key (repeatable; env SANDCELL_API_KEYS)',
          collect,
          [],
        )
        .option(
          '--gvisor-key <name>',
          "run the sessions of the API key of this name (name:key) on gVisor, whatever the server's backend (repeatable; env SANDCELL_GVISOR_KEYS)",
          collect,
          [],
        )
        .option(
          '--allowed-host <name>',
          'also answer requests for this Host name, e.g. behind a reverse proxy; without keys only loopback names are answered (repeatable; env SANDCELL_ALLOWED_HOSTS)',
          collect,
          [],
        )
        .option(
          '--sandbox-domain <domain>',
          'serve port P of sandbox ID at P-ID.DOMAIN, a wildcard name pointing here (default: localhost:PORT; env SANDCELL_SANDBOX_DOMAIN)',
        )
        .option('--pool-size <n>', 'sessions kept warm whatever the demand (default: 2, env SANDCELL_POOL_SIZE)')
        .option(
          '--pool-max <n>',
          'most sessions kept warm as new ones arrive faster (per environment, by the recent rate); equal to --pool-size keeps exactly that many (default: 8, or 0 with --pool-size 0; env SANDCELL_POOL_MAX)',
        )
        .option('--max-sessions <n>', 'live sessions on the server (default: 64, env SANDCELL_MAX_SESSIONS)')
        .option(
          '--data-budget-bytes <size>',
          "RAM all sessions' files (/mnt/data) may hold together, e.g. 8G (default: half the host's memory, env SANDCELL_DATA_BUDGET_BYTES)",
        )
        .option('--sessions-per-key <n>', 'live sessions per key (default: 32, env SANDCELL_SESSIONS_PER_KEY)')
        .option(
          '--executions-per-minute <n>',
          'per key, conversation uploads included; 0 for no limit (default: 600, env SANDCELL_EXECUTIONS_PER_MINUTE)',
        )
        .option(
          '--max-request-bytes <size>',
          'largest JSON body (code), e.g. 4M (default: 2112K, env SANDCELL_MAX_REQUEST_BYTES)',
        )
        .option(
          '--max-upload-bytes <size>',
          'largest uploaded file, e.g. 256M (default: 64M, env SANDCELL_MAX_UPLOAD_BYTES)',
        )
        .option(
          '--max-execution-time <duration>',
          'longest an execution may ask for, e.g. 15m (default: 5m, env SANDCELL_MAX_EXECUTION_TIME)',
        )
        .option(
          '--max-queued-executions <n>',
          'executions that may wait in a session behind the running one (default: 16, env SANDCELL_MAX_QUEUED_EXECUTIONS)',
        )
        .option(
          '--mcp-sessions-per-key <n>',
          'MCP sessions open at /mcp per key (default: 16, env SANDCELL_MCP_SESSIONS_PER_KEY)',
        )
        .option('--max-connections <n>', 'open TCP connections (default: 1024, env SANDCELL_MAX_CONNECTIONS)')
        .option(
          '--max-connections-per-address <n>',
          'open TCP connections from one client address (default: 256, env SANDCELL_MAX_CONNECTIONS_PER_ADDRESS)',
        )
        .option(
          '--headers-timeout <duration>',
          'close a connection that sends no complete request header this long (default: 10s, env SANDCELL_HEADERS_TIMEOUT)',
        )
        .option(
          '-t, --timeout <duration>',
          'time limit of an execution that asks for none (default: 1m, env SANDCELL_EXECUTION_TIMEOUT)',
        )
        .option(
          '--idle-timeout <duration>',
          'pause (or close) sessions unused this long (default: 20m, env SANDCELL_IDLE_TIMEOUT)',
        )
        .addOption(
          new Option(
            '--on-idle <action>',
            'what an idle session becomes: pause (its state kept in the state directory, resumed at its next request) or close (default: pause, env SANDCELL_ON_IDLE)',
          ).choices(['pause', 'close']),
        )
        .option(
          '--snapshot-bytes-per-key <size>',
          "what one key's snapshots (its paused sessions' included) may take in the state directory (default: 10G, env SANDCELL_SNAPSHOT_BYTES_PER_KEY)",
        )
        .option(
          '--volume-bytes-per-key <size>',
          "what one key's volumes may hold together; a filesystem of that size as root (default: 10G, env SANDCELL_VOLUME_BYTES_PER_KEY)",
        )
        .option(
          '--snapshot-retention <duration>',
          "how long a paused session's snapshot is kept before it is deleted (default: 7d, env SANDCELL_SNAPSHOT_RETENTION)",
        )
        .option('--preload <modules>', 'comma-separated modules to import in warm sessions, or "none"')
        .option(
          '--preload-when-behind',
          'preload every session, even those started for callers who find nothing warm and warm ones while starts would take over 60% of the CPUs (by default they skip it: a cheaper start)',
        )
        .option(
          '--shutdown-grace <duration>',
          'on SIGTERM, how long running executions may finish, then how long the pauses of the live sessions may take (default: 30s)',
        )
        .option(
          '--drain-delay <duration>',
          'on SIGTERM, how long to go on serving while /readyz answers 503, before taking no new connections: time for a load balancer to take this node out (default: 0, env SANDCELL_DRAIN_DELAY)',
        )
        .option('--log-level <level>', 'pino log level (default: info, env SANDCELL_LOG_LEVEL)')
        .addOption(
          new Option(
            '--log-format <format>',
            'log lines: text for people, json (pino) for collectors; auto is text on a terminal, else json',
          )
            .choices(LOG_FORMATS)
            .default('auto'),
        )
        .option(
          '--approve',
          'in the web UI and conversations, code waits for run / skip / edit unless the client says otherwise',
        )
        .option('--no-ui', 'do not serve the web UI at /')
        .option(
          '--allow-host <host>',
          "sessions' default internet access: a host they may reach over HTTP(S) through the gate (repeatable); keys may ask for these or fewer",
          collectHosts,
        )
        .option(
          '--allow-package-index',
          "sessions' default internet access also reaches the Python package index this machine's pip is configured for, so `pip install` works in them; keys may ask for it (network.packageIndex)",
        )
        .option(
          '--permit-host <host>',
          'a host keys may ask their sessions to reach, beyond --allow-host (repeatable; "any" for any) (env SANDCELL_PERMITTED_HOSTS)',
          collectHosts,
        )
        .option(
          '--secret-header <host:header=source>',
          "a header the gate adds to every session's requests for a host it may reach, the key never entering a sandbox: HOST:HEADER=env:VARIABLE or HOST:HEADER=file:PATH (repeatable)",
          collectSecretHeaders,
        )
        .option(
          '--state-dir <dir>',
          'keep conversation histories and paused sessions here, so they survive a restart; default $XDG_DATA_HOME/sandcell or ~/.local/share/sandcell (env SANDCELL_STATE_DIR; "none": in memory only)',
        )
        .option(
          '--no-state-dir',
          'keep conversation histories and paused sessions in memory only (lost when the server stops)',
        )
        .option(
          '--publish-outputs',
          'upload the files each execution writes to the store and answer each with a signed link (env SANDCELL_PUBLISH_OUTPUTS=1)',
        )
        .option(
          '--link-ttl <duration>',
          "how long a published file's link works, at most 7d (default: 1h, env SANDCELL_LINK_TTL)",
        )
        .option(
          '--store <location>',
          "keep paused sessions and snapshots here instead of the state directory: fs:///DIR, s3://BUCKET/PREFIX or azure://ACCOUNT/CONTAINER/PREFIX; servers sharing one resume each other's (needs SANDCELL_SNAPSHOT_SECRET; env SANDCELL_STORE)",
        )
        .option(
          '--advertise-url <url>',
          'be a node of a cluster sharing --store: where the other nodes reach this one, e.g. http://sandcell-0.sandcell-peers:8080; requests for sessions another node holds are sent there (node name: SANDCELL_NODE_NAME; env SANDCELL_ADVERTISE_URL)',
        ),
    ).addHelpText('after', `${UNITS_HELP}${KEYS_HELP}\nWithout a model the web UI still runs notebook cells.`),
  ).action(async (options) => {
    const { serveCommand } = await import('./serve-command.js');
    setExitCode(await serveCommand(options));
  });

  addBackendOptions(
    program
      .command('mcp')
      .description('an MCP server on stdio (for desktop clients and coding agents)')
      .option('--pool-size <n>', 'sessions kept warm (default: 1)')
      .option('--max-sessions <n>', 'live sessions (default: 64)')
      .option(
        '-t, --timeout <duration>',
        'time limit of a run that asks for none (default: 1m, env SANDCELL_EXECUTION_TIMEOUT)',
      )
      .option('--idle-timeout <duration>', 'close sessions unused this long (default: 20m, env SANDCELL_IDLE_TIMEOUT)')
      .option('--preload <modules>', 'comma-separated modules to import in warm sessions, or "none"')
      .option('--log-level <level>', 'pino log level, to stderr (default: warn)')
      .option(
        '--state-dir <dir>',
        'pause named sessions here when the client goes away, and resume each at its next call after a restart; default as `sandcell serve` (env SANDCELL_STATE_DIR; "none": in memory only)',
      )
      .option('--no-state-dir', 'keep nothing once the client goes away')
      .addHelpText('after', UNITS_HELP),
  ).action(async (options) => {
    const { mcpCommand } = await import('./mcp-command.js');
    setExitCode(await mcpCommand(options));
  });

  const image = program.command('image').description('the runtime image both backends can run on');
  image
    .command('build')
    .description('build the runtime (Python, IPython, data packages, kernel) as a Docker image or a root filesystem')
    .addOption(new Option('--backend <name>', 'what to build for').choices(['docker', 'bubblewrap']).default('docker'))
    .addOption(
      new Option('--route <route>', 'how: a Dockerfile (needs a registry) or debootstrap (offline)')
        .choices(['auto', 'dockerfile', 'debootstrap'])
        .default('auto'),
    )
    .option('--mirror <url>', 'Debian mirror for debootstrap (env SANDCELL_DEBIAN_MIRROR)')
    .option(
      '--server',
      'build sandcell itself as a Docker image (sandcell:VERSION and sandcell:latest), whose `sandcell serve` runs bubblewrap sandboxes; see docs/kubernetes.md',
    )
    .option('--force', 'rebuild even when this version is already built')
    .option('--json', 'print the result as JSON')
    .action(async (options) => setExitCode(await imageBuildCommand(options)));
  image
    .command('status')
    .description('say which runtime builds are present for this version of sandcell')
    .option('--json', 'print the status as JSON')
    .action(async (options) => setExitCode(await imageStatusCommand(options)));
  image
    .command('prune')
    .description('remove runtime builds of other sandcell versions that no sandbox or container uses')
    .addOption(new Option('--backend <name>', 'only this backend (default: both)').choices(['docker', 'bubblewrap']))
    .option('--dry-run', 'say what would be removed, remove nothing')
    .option('--json', 'print the result as JSON')
    .action(async (options) => setExitCode(await imagePruneCommand(options)));

  const snapshots = program
    .command('snapshots')
    .description("paused sessions and snapshots in the state directory (a server's, every key's)");
  snapshots
    .command('list')
    .description('list the snapshots and paused sessions the state directory holds')
    .option('--state-dir <dir>', 'the state directory (default: as `sandcell serve`, env SANDCELL_STATE_DIR)')
    .option('--store <location>', 'the store `sandcell serve --store` was given (env SANDCELL_STORE)')
    .option('--json', 'print them as JSON')
    .action(async (options) => {
      const { snapshotsListCommand } = await import('./snapshots-command.js');
      setExitCode(await snapshotsListCommand(options));
    });
  snapshots
    .command('prune')
    .description('delete paused sessions and snapshots older than a duration, and what unfinished snapshots left')
    .option('--older-than <duration>', "how old (default: 7d, the server's default --snapshot-retention)")
    .option('--state-dir <dir>', 'the state directory (default: as `sandcell serve`, env SANDCELL_STATE_DIR)')
    .option('--store <location>', 'the store `sandcell serve --store` was given (env SANDCELL_STORE)')
    .option('--dry-run', 'say what would be deleted, delete nothing')
    .option('--json', 'print the result as JSON')
    .action(async (options) => {
      const { snapshotsPruneCommand } = await import('./snapshots-command.js');
      setExitCode(await snapshotsPruneCommand(options));
    });

  const volumes = program
    .command('volume')
    .description('volumes: files that outlive every sandbox, mounted with --volume NAME:/PATH');
  volumes
    .command('create')
    .description('make a volume (in the state directory; a keyless `sandcell serve` there sees it too)')
    .argument('<name>', 'letters, digits, ".", "_", "-"')
    .option('--json', 'print it as JSON')
    .action(async (name: string, options) => {
      const { volumeCreateCommand } = await import('./volume-command.js');
      setExitCode(await volumeCreateCommand(name, options));
    });
  volumes
    .command('list')
    .description('the volumes, and what they hold against the quota (env SANDCELL_VOLUME_BYTES_PER_KEY)')
    .option('--json', 'print them as JSON')
    .action(async (options) => {
      const { volumeListCommand } = await import('./volume-command.js');
      setExitCode(await volumeListCommand(options));
    });
  volumes
    .command('rm')
    .description('delete a volume and its files (refused while a sandbox of this process mounts it)')
    .argument('<name>', 'the volume')
    .option('--json', 'print what was deleted as JSON')
    .action(async (name: string, options) => {
      const { volumeRemoveCommand } = await import('./volume-command.js');
      setExitCode(await volumeRemoveCommand(name, options));
    });
  volumes
    .command('cp')
    .description(
      'copy a file or a directory between this machine and a volume: `cp data.csv work:/in/`, `cp work:/out ./out`',
    )
    .argument('<source>', 'a path here, or NAME:/PATH in a volume')
    .argument('<target>', 'NAME:/PATH in a volume, or a path here')
    .option('--json', 'print what was copied as JSON')
    .action(async (source: string, target: string, options) => {
      const { volumeCopyCommand } = await import('./volume-command.js');
      setExitCode(await volumeCopyCommand(source, target, options));
    });

  const environments = program
    .command('env')
    .description('custom environments: the runtime plus your packages and files, chosen with --env NAME');
  environments
    .command('build')
    .description(
      'build the environment a description file (sandcell.env.json) or a Dockerfile describes; unchanged is a no-op',
    )
    .argument('<file>', 'the description file, or a Dockerfile (NAME.Dockerfile, Dockerfile.NAME) for docker')
    .addOption(
      new Option('--backend <name>', 'what to build for; default bubblewrap, docker for a Dockerfile').choices([
        'bubblewrap',
        'docker',
      ]),
    )
    .option('--name <name>', "a Dockerfile's environment name (a description file names its own)")
    .option('--mirror <url>', 'Debian mirror, if the runtime has to be built first (env SANDCELL_DEBIAN_MIRROR)')
    .option('--force', 'rebuild even when this content is already built')
    .option(
      '--allow-host <host>',
      "a host the build may reach beyond its apt sources, its Python index and the description's network.allow (repeatable)",
      collectHosts,
    )
    .option(
      '--wheel-cache <dir>',
      "where the files the Python lock pins are kept, for rebuilds without the network (env SANDCELL_WHEEL_CACHE; default the environment store's .wheels)",
    )
    .option('--relock', 'resolve the Python packages again and rewrite the lock beside the description')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, options) => {
      const { envBuildCommand } = await import('./env-command.js');
      setExitCode(await envBuildCommand(file, options));
    });
  environments
    .command('add')
    .description(
      "register an existing Docker image as an environment, unmodified: checked for python3 and IPython, sandcell's kernel mounted in at session start",
    )
    .argument('<name>', 'the environment name (lower-case letters, digits, -)')
    .requiredOption('--image <image>', 'repo:tag or id of an image the engine has (sandcell never pulls)')
    .option('--json', 'print the result as JSON')
    .action(async (name: string, options) => {
      const { envAddCommand } = await import('./env-command.js');
      setExitCode(await envAddCommand(name, options));
    });
  environments
    .command('list')
    .description('the environments built, their size and what they add')
    .option('--json', 'print them as JSON')
    .action(async (options) => {
      const { envListCommand } = await import('./env-command.js');
      setExitCode(await envListCommand(options));
    });
  environments
    .command('remove')
    .description('remove an environment: every build of it, and its Docker images')
    .argument('<name>', 'the environment')
    .option('--json', 'print what was removed as JSON')
    .action(async (name: string, options) => {
      const { envRemoveCommand } = await import('./env-command.js');
      setExitCode(await envRemoveCommand(name, options));
    });

  return program;
}

export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = buildProgram((code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (error) {
    return reported(error);
  } finally {
    // The volumes' images this command mounted (as root) are unmounted as it ends; their files stay.
    await closeLocalVolumes().catch(() => undefined);
  }
}

function reported(error: unknown): number {
  if (error instanceof CommanderError) {
    return error.exitCode === 0 ? 0 : EXIT_USAGE;
  }
  if (error instanceof CliExit) {
    if (error.message) process.stderr.write(`${red(error.message)}\n`);
    return error.exitCode;
  }
  if (error instanceof SandcellError) {
    process.stderr.write(`${red(`sandcell: ${error.message}`)}\n`);
    return USAGE_CODES.has(error.code) ? EXIT_USAGE : EXIT_SANDBOX_FAILURE;
  }
  process.stderr.write(`${red(`sandcell: unexpected error: ${(error as Error).stack ?? String(error)}`)}\n`);
  return EXIT_SANDBOX_FAILURE;
}

/** Errors the command line itself caused (a name, a path, a volume): usage errors, not the sandbox's failures. */
const USAGE_CODES = new Set<SandcellError['code']>([
  'invalid-input',
  'invalid-path',
  'environment-not-found',
  'volume-not-found',
  'volume-exists',
  'volume-in-use',
]);
