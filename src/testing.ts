/**
 * sandcell/testing: the scripted backend and the scripted model, for testing
 * code built on sandcell (agents, servers, tools) without a sandbox or an LLM
 * provider. The backend's kernels answer from a script: they print, return
 * results, fail, hang, die or break the protocol on cue, in milliseconds, on
 * any machine. It isolates nothing: never run untrusted code with it (it runs
 * no code at all). The model answers from a script too and records what it
 * was sent. Named exports only.
 */

export {
  type ScriptedChatCall,
  ScriptedChatModel,
  type ScriptedChatModelOptions,
  type ScriptedChatResponder,
  type ScriptedChatResponse,
  type ScriptedReply,
  type ScriptedToolCall,
} from './agents/scripted-chat-model.js';
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
