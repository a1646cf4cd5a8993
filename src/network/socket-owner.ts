/** Who may connect to a unix socket the host binds into a session's sandboxes (the gate's, the ingress's). */
import { chmod, chown } from 'node:fs/promises';

/**
 * Connecting to a unix socket needs write permission on it: 0600 and owned by the sandbox's uid
 * lets that uid in and no other (root aside). Without an owner the sandbox runs as this process's
 * uid, which already owns the socket. Handing a socket to another uid needs root; a sandcell that
 * is not root (Docker without root) keeps it, 0660, of its own effective gid (a process may always
 * give its files its own group), and returns that gid: the backend adds it to the sandbox's
 * groups. Other local users are not in that group (Debian gives each user a group of their own).
 */
export async function restrictToOwner(
  socketPath: string,
  owner: { uid: number; gid: number } | undefined,
): Promise<number | undefined> {
  // The mode first, while the socket is this process's: changing another uid's file's mode needs
  // CAP_FOWNER, which root in a container without it (sandcell's own image) does not have.
  await chmod(socketPath, 0o600);
  if (owner && owner.uid !== process.getuid?.()) {
    const given = await chown(socketPath, owner.uid, owner.gid).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'EPERM' && process.getuid?.() !== 0) return false;
        throw error;
      },
    );
    if (!given) {
      const group = process.getegid?.() ?? owner.gid;
      await chown(socketPath, -1, group);
      await chmod(socketPath, 0o660);
      return group;
    }
  }
  return undefined;
}
