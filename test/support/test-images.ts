/**
 * Throwaway Docker images for tests, built offline from a Dockerfile string
 * (FROM an image the engine has), and removed afterwards.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';

export async function buildTestImage(docker: Dockerode, tag: string, dockerfile: string): Promise<void> {
  const context = await mkdtemp(path.join(os.tmpdir(), 'sandcell-test-image-'));
  try {
    await writeFile(path.join(context, 'Dockerfile'), dockerfile);
    const stream = await docker.buildImage({ context, src: ['Dockerfile'] }, { t: tag, rm: true, forcerm: true });
    await new Promise<void>((resolve, reject) => {
      let failure: string | undefined;
      docker.modem.followProgress(
        stream,
        (error: Error | null) => (error || failure ? reject(error ?? new Error(failure)) : resolve()),
        (event: { error?: string }) => {
          if (event.error) failure = event.error;
        },
      );
    });
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

export async function removeTestImage(docker: Dockerode, tag: string): Promise<void> {
  await docker
    .getImage(tag)
    .remove({ force: true })
    .catch(() => undefined);
}
