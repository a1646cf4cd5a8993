/** The REST shapes Jupyter clients read: a kernel and a session. */
import type { JupyterKernel } from './jupyter-kernel.js';
import type { NotebookSession } from './notebook-sessions.js';

export function presentKernel(kernel: JupyterKernel) {
  return {
    id: kernel.id,
    name: kernel.spec.name,
    last_activity: kernel.lastActivity.toISOString(),
    execution_state: kernel.executionState,
    connections: kernel.sockets.size,
  };
}

export function presentSession(session: NotebookSession) {
  return {
    id: session.id,
    path: session.path,
    name: session.name,
    type: session.type,
    kernel: presentKernel(session.kernel),
    notebook: { path: session.path, name: session.name },
  };
}
