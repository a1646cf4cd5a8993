/** One line saying what an environment from an existing image is: `env list` and `doctor` print it. */
import type { ImageEnvironmentFacts } from '../environments/store.js';

export function describeImage(image: ImageEnvironmentFacts): string {
  const origin = image.kind === 'dockerfile' ? `Dockerfile ${image.source}` : `image ${image.source}`;
  return `${origin}: Python ${image.pythonVersion}, IPython ${image.ipythonVersion}; languages: ${image.languages.join(' ')}`;
}
