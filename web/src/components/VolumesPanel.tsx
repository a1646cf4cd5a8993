/**
 * The key's volumes, below the session's files: files that outlive every conversation. Made and
 * deleted here, chosen for the next new conversation (mounted at /mnt/volumes/NAME, and the model
 * is told so), and browsed: a directory at a time, each file downloaded, uploaded or deleted.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { type ConversationVolume, formatBytes } from '../../../src/protocol/index';
import { type ApiError, api, download, type VolumeEntry, type VolumeList } from '../api';
import { formatTime } from '../format';
import { ConfirmDelete, DeleteButton } from './ConfirmDelete';
import { FilePicker } from './FilePicker';
import { DownloadIcon, RefreshIcon } from './Icons';

/** Where a new conversation mounts a volume it chose. */
export const volumeMountPath = (name: string) => `/mnt/volumes/${name}`;

export interface VolumesPanelProps {
  /** The open conversation's mounts; undefined while no conversation is open (a new one is a draft). */
  mounted: ConversationVolume[] | undefined;
  /** The volumes the next new conversation mounts (by name). */
  chosen: string[];
  onChoose: (names: string[]) => void;
  /** Changes whenever the files may have changed (a turn ended). */
  version: number;
  onError: (message: string) => void;
}

export function VolumesPanel({ mounted, chosen, onChoose, version, onError }: VolumesPanelProps) {
  const [list, setList] = useState<VolumeList>();
  const [unavailable, setUnavailable] = useState<string>();
  const [reload, setReload] = useState(0);
  const [name, setName] = useState('');
  const [browsing, setBrowsing] = useState<string>();
  const [confirming, setConfirming] = useState<string>();

  useEffect(() => {
    let live = true;
    api
      .listVolumes()
      .then((answer) => {
        if (!live) return;
        setList(answer);
        setUnavailable(undefined);
      })
      .catch((error: ApiError) => {
        if (!live) return;
        // A server without a state directory (or a cluster node whose volumes are away) says why.
        setUnavailable(error.message);
      });
    return () => {
      live = false;
    };
  }, [version, reload]);

  const create = async (event: Event) => {
    event.preventDefault();
    const wanted = name.trim();
    if (!wanted) return;
    try {
      await api.createVolume(wanted);
      setName('');
      setReload((value) => value + 1);
    } catch (error) {
      onError(`The volume ${wanted} could not be made: ${(error as Error).message}`);
    }
  };

  const remove = async (volume: string) => {
    setConfirming(undefined);
    try {
      await api.deleteVolume(volume);
      if (browsing === volume) setBrowsing(undefined);
      onChoose(chosen.filter((candidate) => candidate !== volume));
      setReload((value) => value + 1);
    } catch (error) {
      onError(`The volume ${volume} could not be deleted: ${(error as Error).message}`);
    }
  };

  return (
    <section class="volumes-section" aria-label="Volumes">
      <header class="panel-subheader">
        <h3>Volumes</h3>
        {list ? (
          <span class="muted path-hint">
            {formatBytes(list.usedBytes)} of {formatBytes(list.quotaBytes)}
          </span>
        ) : null}
        <button
          type="button"
          class="icon-button"
          aria-label="Refresh the volumes"
          title="Refresh"
          onClick={() => setReload((value) => value + 1)}
        >
          <RefreshIcon />
        </button>
      </header>
      {unavailable !== undefined ? (
        <p class="muted">{unavailable}</p>
      ) : list === undefined ? (
        <p class="muted">Loading…</p>
      ) : (
        <>
          <p class="muted">
            Files kept across conversations.{' '}
            {mounted === undefined
              ? 'Tick one to mount it in the new conversation.'
              : 'A new conversation can mount one.'}
          </p>
          <ul class="file-list">
            {list.volumes.map((volume) => {
              const mount = mounted?.find((candidate) => candidate.volumeId === volume.id);
              return (
                <li key={volume.id} class="volume-row">
                  <div class="file-row">
                    <div class="file-row-main">
                      {mounted === undefined ? (
                        <label class="volume-choice">
                          <input
                            type="checkbox"
                            checked={chosen.includes(volume.name)}
                            aria-label={`Mount ${volume.name} in the new conversation`}
                            onChange={(event) =>
                              onChoose(
                                (event.currentTarget as HTMLInputElement).checked
                                  ? [...chosen, volume.name]
                                  : chosen.filter((candidate) => candidate !== volume.name),
                              )
                            }
                          />
                          <span class="file-path">{volume.name}</span>
                        </label>
                      ) : (
                        <span class="file-path">{volume.name}</span>
                      )}
                      <span class="muted file-meta">
                        {mount
                          ? `mounted at ${mount.path}${mount.readOnly ? ' (read-only)' : ''}`
                          : mounted === undefined && chosen.includes(volume.name)
                            ? `at ${volumeMountPath(volume.name)}`
                            : formatTime(volume.createdAt)}
                      </span>
                    </div>
                    <div class="file-row-actions">
                      {confirming === volume.name ? (
                        <ConfirmDelete
                          what={`the volume ${volume.name}`}
                          onDelete={() => void remove(volume.name)}
                          onKeep={() => setConfirming(undefined)}
                        />
                      ) : (
                        <>
                          <button
                            type="button"
                            class="button-quiet small"
                            aria-expanded={browsing === volume.name}
                            aria-label={`Browse ${volume.name}`}
                            onClick={() => setBrowsing(browsing === volume.name ? undefined : volume.name)}
                          >
                            {browsing === volume.name ? 'Hide' : 'Browse'}
                          </button>
                          <DeleteButton what={`the volume ${volume.name}`} onClick={() => setConfirming(volume.name)} />
                        </>
                      )}
                    </div>
                  </div>
                  {browsing === volume.name ? (
                    <VolumeBrowser volume={volume.name} version={version} onError={onError} />
                  ) : null}
                </li>
              );
            })}
          </ul>
          <form class="volume-new" onSubmit={(event) => void create(event)}>
            <input
              type="text"
              value={name}
              maxLength={64}
              pattern="[A-Za-z0-9._\-]+"
              placeholder="new-volume"
              aria-label="New volume name"
              onInput={(event) => setName((event.currentTarget as HTMLInputElement).value)}
            />
            <button type="submit" class="button-secondary small" disabled={!name.trim()}>
              Make volume
            </button>
          </form>
        </>
      )}
    </section>
  );
}

/** An entry's path as the API gives it (from the volume's top, `/dir/name`), without its leading slash. */
const inVolume = (entry: VolumeEntry) => entry.path.replace(/^\/+/, '');

/** One volume's files, a directory at a time. */
function VolumeBrowser({
  volume,
  version,
  onError,
}: {
  volume: string;
  version: number;
  onError: (m: string) => void;
}) {
  const [directory, setDirectory] = useState('');
  const [entries, setEntries] = useState<VolumeEntry[]>();
  const [reload, setReload] = useState(0);
  const picker = useRef<HTMLInputElement>(null);

  useEffect(() => {
    let live = true;
    api
      .listVolume(volume, directory)
      .then((listed) => {
        if (live) setEntries([...listed].sort((a, b) => a.name.localeCompare(b.name)));
      })
      .catch((error: ApiError) => {
        if (!live) return;
        setEntries([]);
        onError(`${volume}/${directory} could not be listed: ${error.message}`);
      });
    return () => {
      live = false;
    };
  }, [volume, directory, version, reload]);

  const inside = (name: string) => (directory ? `${directory}/${name}` : name);
  const upload = async (files: File[]) => {
    for (const file of files) {
      try {
        await api.writeVolumeFile(volume, inside(file.name), file);
      } catch (error) {
        onError(`${file.name} could not be written to ${volume}: ${(error as Error).message}`);
      }
    }
    setReload((value) => value + 1);
  };
  const remove = async (entry: VolumeEntry) => {
    try {
      await api.deleteVolumeEntry(volume, inVolume(entry));
      setReload((value) => value + 1);
    } catch (error) {
      onError(`${entry.path} could not be deleted: ${(error as Error).message}`);
    }
  };

  return (
    <fieldset class="volume-browser">
      <legend class="visually-hidden">Files of {volume}</legend>
      <div class="volume-where">
        <span class="muted">/{directory}</span>
        {directory ? (
          <button
            type="button"
            class="button-quiet small"
            onClick={() => setDirectory(directory.split('/').slice(0, -1).join('/'))}
          >
            Up
          </button>
        ) : null}
      </div>
      {entries === undefined ? (
        <p class="muted">Loading…</p>
      ) : entries.length === 0 ? (
        <p class="muted">Empty.</p>
      ) : (
        <ul class="file-list">
          {entries.map((entry) => (
            <li key={entry.path} class="file-row">
              <div class="file-row-main">
                {entry.type === 'directory' ? (
                  <button type="button" class="link-button file-path" onClick={() => setDirectory(inVolume(entry))}>
                    {entry.name}/
                  </button>
                ) : (
                  <span class="file-path" title={entry.path}>
                    {entry.name}
                  </span>
                )}
                <span class="muted file-meta">
                  {entry.type === 'file' ? `${formatBytes(entry.size)} · ` : ''}
                  {formatTime(entry.mtime)}
                </span>
              </div>
              <div class="file-row-actions">
                {entry.type === 'file' ? (
                  <button
                    type="button"
                    class="icon-button"
                    aria-label={`Download ${entry.path} from ${volume}`}
                    title="Download"
                    onClick={() =>
                      download(api.volumeFileUrl(volume, inVolume(entry)), entry.name).catch((error: Error) =>
                        onError(`${entry.path} could not be downloaded: ${error.message}`),
                      )
                    }
                  >
                    <DownloadIcon />
                  </button>
                ) : null}
                <DeleteButton what={`${entry.path} from ${volume}`} onClick={() => void remove(entry)} />
              </div>
            </li>
          ))}
        </ul>
      )}
      <FilePicker inputRef={picker} label={`Files to upload to ${volume}`} onPick={(chosen) => void upload(chosen)} />
      <button type="button" class="button-secondary small" onClick={() => picker.current?.click()}>
        Upload to {volume}/{directory}…
      </button>
    </fieldset>
  );
}
