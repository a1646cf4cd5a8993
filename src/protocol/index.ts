/**
 * The shapes that cross a process boundary: the transcript, the stream
 * events, the REST answers. A leaf: it imports nothing of sandcell's, so
 * agents, the server and the web UI (which bundles it) share it.
 */
export { applyConversationEvent } from './apply-conversation-event.js';
export type { ConversationEvent, Presentation, WirePresentation, WorkEvent } from './events.js';
export { formatBytes } from './format-bytes.js';
export { bufferEncoding, findImage, IMAGE_TYPES, type ImageType, imageType, isRasterImage } from './images.js';
export type {
  CommandOutcome,
  CommandStreamEvent,
  ErrorBody,
  ExecutionStreamEvent,
  FileInfo,
  ServerConfig,
} from './rest.js';
export { MAX_SAVED_IMAGE_BYTES, MAX_SAVED_IMAGES_PER_STEP, savedImages, savedImageType } from './saved-images.js';
export type {
  ApprovalMode,
  CodeFile,
  CodeLanguage,
  CodeStatus,
  CodeStep,
  Conversation,
  ConversationMode,
  ConversationStatus,
  ConversationSummary,
  ConversationVolume,
  ExecutionSummary,
  FilePreview,
  ImageLink,
  NotRestoredName,
  PresentedResult,
  SessionResumed,
  SkipReason,
  Step,
  StopReason,
  TextStep,
  TracebackError,
  Turn,
  TurnAnswer,
  TurnStatus,
} from './transcript.js';
