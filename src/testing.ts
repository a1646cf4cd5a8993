/**
 * sandcell/testing: the scripted backend, for testing code built on sandcell
 * (agents, servers, tools) without a sandbox. Its kernels answer from a
 * script: they print, return results, fail, hang, die or break the protocol
 * on cue, in milliseconds, on any machine. It isolates nothing: never run
 * untrusted code with it (it runs no code at all). Named exports only.
 */
export {
  type CommandScript,
  createScriptedBackend,
  type ExecuteScript,
  ScriptedBackend,
  type ScriptedBackendOptions,
  type ScriptedCommandContext,
  type ScriptedCommandStep,
  type ScriptedFileEntry,
  ScriptedFileError,
  ScriptedFileStore,
  type ScriptedRun,
  type ScriptedRunContext,
  ScriptedSandbox,
  type ScriptedStep,
  ScriptedVolume,
} from './backends/scripted/index.js';
