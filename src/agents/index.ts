/**
 * sandcell/agents: models that write Python and sandcell running it.
 * ChatModel providers (OpenAI, Azure OpenAI, OpenAI-compatible servers,
 * Anthropic), the Agent building blocks, FileAccessAgent, PythonExecAgent,
 * and DataChat, which puts them together. Named exports only.
 */

export { Agent, type AgentOptions, type AskOptions, DEFAULT_MAX_STEPS } from './agent.js';
export { ChatMessages, type ChatMessagesOptions, DEFAULT_HISTORY_CHARS } from './chat-messages.js';
export { type DataAnswer, DataChat, type DataChatOptions, MAX_FILES_PER_DIRECTORY } from './data-chat.js';
export { type DataPreview, previewData } from './data-preview.js';
export { DEFAULT_MAX_FILE_BYTES } from './data-roots.js';
export { ModelConfigurationError, ModelResponseError, ModelUnavailableError } from './errors.js';
export type {
  AgentAnswer,
  AgentEvent,
  AgentEventListener,
  InProcessPresentation,
  LoadedFileSummary,
  SessionFile,
  StopReason,
} from './events.js';
export { boundText, DEFAULT_TOOL_OUTPUT_CHARS } from './execution-report.js';
export {
  DEFAULT_FILE_ACCESS_INSTRUCTIONS,
  FileAccessAgent,
  type FileAccessAgentOptions,
  type LoadedFile,
  SAFE_FILE_ACCESS,
} from './file-access-agent.js';
export {
  type ChatMessage,
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type ChatUsage,
  DEFAULT_MODEL_MAX_RETRIES,
  DEFAULT_MODEL_TIMEOUT_MS,
  REASONING_EFFORTS,
  type ReasoningEffort,
  type ToolCall,
  type ToolDefinition,
} from './model.js';
export { AnthropicChatModel, type AnthropicChatModelOptions } from './providers/anthropic.js';
export { OpenAIChatModel, type OpenAIChatModelOptions } from './providers/openai.js';
export {
  configPaths,
  createChatModel,
  DEFAULT_MODELS,
  loadConfig,
  type ModelSelection,
  modelIsConfigured,
  PROVIDERS,
  type ProviderName,
  type SandcellConfig,
} from './providers/select.js';
export {
  type ApprovalDecision,
  type ApprovalRequest,
  type CodeTool,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_PYTHON_INSTRUCTIONS,
  EXECUTE_PYTHON_CODE,
  type ExecutionRecord,
  PythonExecAgent,
  type PythonExecAgentOptions,
} from './python-exec-agent.js';
export { RUN_SHELL_COMMAND } from './shell-command-tool.js';
export { defineTool, type Tool, type ToolContext, type ToolOutput, toToolDefinition } from './tool.js';
export { type ToolCallOutcome, ToolManager } from './tool-manager.js';
