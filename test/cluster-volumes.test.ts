/**
 * Volumes in a cluster: three `sandcell serve` nodes on bubblewrap in network namespaces behind
 * HAProxy (support/cluster-nodes.ts), every request balanced anew. A key's volumes live on one node,
 * its home (the one that made its first); whichever node a request reaches, the volume APIs and the
 * sessions that mount a volume are answered there: the E2B SDK's and /v1's, new sessions and a paused
 * one's resume. With the home stopped the requests are refused, naming it, never served an empty
 * volume; once it is back every file is there.
 */
import { Sandbox, Volume } from 'e2b';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBubblewrapBackend } from '../src/backends/bubblewrap/index.js';
import { nodeTag } from '../src/server/core/cluster.js';
import { describeWhenAvailable, unavailableReason } from './support/backends.js';
import { CLUSTER_KEY as KEY, TestCluster } from './support/cluster-nodes.js';
import { netnsUnavailable } from './support/netns-cluster.js';

const reason =
  netnsUnavailable() ??
  (process.getuid?.() === 0 ? undefined : 'volumes in a cluster are tested as root') ??
  (await unavailableReason(createBubblewrapBackend()));

let cluster: TestCluster;
const call = (...args: Parameters<TestCluster['call']>) => cluster.call(...args);
const NODES = ['node-1', 'node-2', 'node-3'];
const homeOf = (id: string) =>
  NODES.find((name) => id.startsWith(`vol${nodeTag(name)}`) || id.startsWith(nodeTag(name)));

describeWhenAvailable('volumes in a cluster of nodes behind HAProxy', 'bubblewrap', reason, () => {
  beforeAll(async () => {
    cluster = await TestCluster.start([1, 2, 3]);
    process.env.E2B_API_URL = `${cluster.front}/e2b`;
    process.env.E2B_SANDBOX_URL = `${cluster.front}/e2b`;
    process.env.E2B_VOLUME_API_URL = `${cluster.front}/e2b`;
    process.env.E2B_API_KEY = KEY;
    delete process.env.E2B_DOMAIN;
  }, 120_000);

  afterAll(async () => {
    delete process.env.E2B_VOLUME_API_URL;
    await cluster?.close();
  }, 60_000);

  it('the key’s volumes and the sessions that mount them are on one node, whichever node each request reaches; with it stopped they are refused, and back, all there', async () => {
    const { status, json: made } = await call('/v1/volumes', { name: 'shared' });
    expect(status).toBe(201);
    const home = homeOf(made.id);
    expect(home).toBeDefined();
    // The E2B SDK's volume, made through another node of the round robin, is kept by the same one.
    const volume = await Volume.create('datasets');
    expect(homeOf(volume.volumeId)).toBe(home);

    // Every node answers the list (HAProxy sends each request to the next one), with both volumes.
    for (let turn = 0; turn < 6; turn++) {
      const { status: listed, json } = await call('/v1/volumes');
      expect(listed).toBe(200);
      expect(json.volumes.map((entry: { name: string }) => entry.name).sort()).toEqual(['datasets', 'shared']);
    }
    // A name is the key's once, wherever the second asking lands.
    for (let turn = 0; turn < 3; turn++) expect((await call('/v1/volumes', { name: 'shared' })).status).toBe(409);

    // Sessions that mount a volume start on its node, whichever node took the request.
    const sessions: string[] = [];
    for (let turn = 0; turn < 3; turn++) {
      const { status: created, json } = await call('/v1/sessions', {
        volumes: [{ volume: 'shared', path: '/mnt/shared' }],
      });
      expect(created, JSON.stringify(json)).toBe(201);
      expect(homeOf(json.id)).toBe(home);
      sessions.push(json.id);
    }
    const [writer, reader, paused] = sessions as [string, string, string];
    expect((await cluster.run(writer, 'open("/mnt/shared/note.txt", "w").write("from a sandbox")')).json.status).toBe(
      'ok',
    );
    expect((await cluster.run(reader, 'print(open("/mnt/shared/note.txt").read())')).json.stdout).toBe(
      'from a sandbox\n',
    );
    // Through the E2B SDK and its content API (the volume's token alone, relayed by the id's tag).
    const sandbox = await Sandbox.create({ volumeMounts: { '/mnt/datasets': volume } });
    expect(homeOf(sandbox.sandboxId)).toBe(home);
    await sandbox.commands.run('echo 1,2,3 > /mnt/datasets/numbers.csv');
    await sandbox.kill();
    const connected = await Volume.connect(volume.volumeId);
    for (let turn = 0; turn < 3; turn++) expect(await connected.readFile('/numbers.csv')).toBe('1,2,3\n');
    await connected.writeFile('/written.txt', 'by the content API');
    const again = await Sandbox.create({ volumeMounts: { '/mnt/datasets': 'datasets' } });
    expect((await again.commands.run('cat /mnt/datasets/written.txt')).stdout).toBe('by the content API');
    await again.kill();

    // A session that mounts one, paused; its node stopped (a drain pauses the others too).
    expect((await call(`/v1/sessions/${paused}/pause`, {})).status).toBe(200);
    const index = Number(home?.slice('node-'.length));
    expect(await cluster.stopNode(index, 'SIGTERM')).toBe(0);
    await cluster.unserved(home as string);
    for (let turn = 0; turn < 3; turn++) {
      const listed = await call('/v1/volumes');
      expect(listed.status).toBe(503);
      expect(listed.json.error.code).toBe('volumes-elsewhere');
      expect(listed.json.error.message).toContain(`node ${home}`);
      const mounting = await call('/v1/sessions', { volumes: [{ volume: 'shared', path: '/mnt/shared' }] });
      expect(mounting.status).toBe(503);
      expect(mounting.json.error.code).toBe('volumes-elsewhere');
      // Its resume waits for the node: not resumed elsewhere with the volume missing.
      const resumed = await cluster.run(paused, 'print(open("/mnt/shared/note.txt").read())');
      expect(resumed.status).toBe(503);
      expect(resumed.json.error.code).toBe('volumes-elsewhere');
    }
    expect((await connected.readFile('/numbers.csv').catch((error: Error) => error)) instanceof Error).toBe(true);
    // Sessions without volumes go on, on the other nodes.
    const { status: plain, json: other } = await call('/v1/sessions', {});
    expect(plain).toBe(201);
    expect((await cluster.run(other.id, 'print(6 * 7)')).json.stdout).toBe('42\n');

    // Back under its name and state directory: the volumes, their files, and the paused session.
    await cluster.startNode(index);
    await cluster.served(NODES);
    const back = await cluster.run(paused, 'print(open("/mnt/shared/note.txt").read())');
    expect(back.json.stdout, JSON.stringify(back)).toBe('from a sandbox\n');
    expect(await connected.readFile('/written.txt')).toBe('by the content API');
    for (const id of [...sessions, other.id])
      expect((await call(`/v1/sessions/${id}`, undefined, 'DELETE')).status).toBe(204);
    expect((await call('/v1/volumes/shared', undefined, 'DELETE')).status).toBe(204);
    await Volume.destroy(volume.volumeId);
    expect((await call('/v1/volumes')).json.volumes).toEqual([]);
  }, 240_000);
});
