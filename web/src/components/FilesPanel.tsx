/** The session's /mnt/data: list, download, delete, upload. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type FileInfo, formatBytes } from '../../../src/protocol/index';
import { type ApiError, api, download } from '../api';
import { baseName, formatTime } from '../format';
import { ConfirmDelete, DeleteButton } from './ConfirmDelete';
import { FilePicker } from './FilePicker';
import { CloseIcon, DownloadIcon, RefreshIcon } from './Icons';

export interface FilesPanelProps {
  sessionId: string | undefined;
  expired: boolean;
  /** Changes whenever the files may have changed (a turn ended, an upload). */
  version: number;
  onUpload: (files: File[]) => void;
  onError: (message: string) => void;
  onClose: () => void;
  uploadDisabled?: string;
  /** Shown below the files (the key's volumes). */
  children?: ComponentChildren;
}

export function FilesPanel({
  sessionId,
  expired,
  version,
  onUpload,
  onError,
  onClose,
  uploadDisabled,
  children,
}: FilesPanelProps) {
  const [files, setFiles] = useState<FileInfo[]>();
  const [state, setState] = useState<'idle' | 'loading' | 'gone'>('idle');
  const [confirming, setConfirming] = useState<string>();
  const [reload, setReload] = useState(0);
  const picker = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (!sessionId || expired) {
      setFiles(undefined);
      setState(expired ? 'gone' : 'idle');
      return;
    }
    let live = true;
    setState('loading');
    api
      .listFiles(sessionId)
      .then((list) => {
        if (!live) return;
        setFiles(list.filter((file) => file.type === 'file').sort((a, b) => a.path.localeCompare(b.path)));
        setState('idle');
      })
      .catch((error: ApiError) => {
        if (!live) return;
        if (error.status === 404) setState('gone');
        else {
          setState('idle');
          onError(`The file list could not be loaded: ${error.message}`);
        }
      });
    return () => {
      live = false;
    };
  }, [sessionId, expired, version, reload]);

  const remove = async (file: FileInfo) => {
    if (!sessionId) return;
    setConfirming(undefined);
    try {
      await api.deleteFile(sessionId, file.path);
      setFiles((current) => current?.filter((candidate) => candidate.path !== file.path));
    } catch (error) {
      onError(`${file.path} could not be deleted: ${(error as Error).message}`);
    }
  };

  const save = (file: FileInfo) => {
    if (!sessionId) return;
    download(file.url ?? api.fileUrl(sessionId, file.path), baseName(file.path)).catch((error: Error) =>
      onError(`${file.path} could not be downloaded: ${error.message}`),
    );
  };

  return (
    <aside class="files-panel" aria-label="Files in /mnt/data">
      <header class="panel-header">
        <h2>Files</h2>
        <span class="muted path-hint">/mnt/data</span>
        <div class="panel-actions">
          <button
            type="button"
            class="icon-button"
            aria-label="Refresh the file list"
            title="Refresh"
            disabled={!sessionId || expired}
            onClick={() => setReload((value) => value + 1)}
          >
            <RefreshIcon />
          </button>
          <button type="button" class="icon-button" aria-label="Close the files panel" title="Close" onClick={onClose}>
            <CloseIcon />
          </button>
        </div>
      </header>
      <div class="panel-body">
        {state === 'gone' ? (
          <p class="muted">This conversation's session has ended: its files are gone.</p>
        ) : !sessionId ? (
          <p class="muted">Files you upload or that code writes appear here.</p>
        ) : files === undefined ? (
          <p class="muted">Loading…</p>
        ) : files.length === 0 ? (
          <p class="muted">No files yet.</p>
        ) : (
          <ul class="file-list" aria-busy={state === 'loading'}>
            {files.map((file) => (
              <li key={file.path} class="file-row">
                <div class="file-row-main">
                  <span class="file-path" title={file.path}>
                    {file.path}
                  </span>
                  <span class="muted file-meta">
                    {formatBytes(file.size)} · {formatTime(file.modifiedAt)}
                  </span>
                </div>
                <div class="file-row-actions">
                  {confirming === file.path ? (
                    <ConfirmDelete
                      what={file.path}
                      onDelete={() => void remove(file)}
                      onKeep={() => setConfirming(undefined)}
                    />
                  ) : (
                    <>
                      <button
                        type="button"
                        class="icon-button"
                        aria-label={`Download ${file.path}`}
                        title="Download"
                        onClick={() => save(file)}
                      >
                        <DownloadIcon />
                      </button>
                      <DeleteButton what={file.path} onClick={() => setConfirming(file.path)} />
                    </>
                  )}
                </div>
              </li>
            ))}
          </ul>
        )}
        {children}
      </div>
      <footer class="panel-footer">
        <FilePicker inputRef={picker} onPick={onUpload} />
        <button
          type="button"
          class="button-secondary wide"
          disabled={uploadDisabled !== undefined}
          title={uploadDisabled}
          onClick={() => picker.current?.click()}
        >
          Upload files…
        </button>
      </footer>
    </aside>
  );
}
