/**
 * Node only: the lock of a `FileStore` folder, one the operating system releases when its holder dies (`node.ts`
 * argues the design in its module doc). `tryLock` takes this machine's namespace's part of it once, or says that
 * another process holds it; the lock it gives keeps out the processes of other network namespaces too once
 * `announce` said so (Linux), and from the start elsewhere.
 */
import { closeSync, lstatSync, openSync, readdirSync, statSync, unlinkSync, constants as fsConstants } from "node:fs";
import { createHash } from "node:crypto";
import { connect, createServer, Server } from "node:net";
import { join } from "node:path";

/** The longest path a Unix socket address holds: Linux's `sun_path` is 108 bytes, its terminating zero included. */
const MAX_SOCKET_PATH = 107;
/** How long a connection to a lock socket may take before its holder counts as alive (a Unix socket answers at once;
 * this only keeps a transaction from waiting forever on a socket that never does). */
const PROBE_MS = 2000;
const BSD_O_EXLOCK = 0x20; // <fcntl.h> of macOS, FreeBSD, OpenBSD and NetBSD

/** The name of a network namespace's lock socket in a store folder: `lock.<inode of the namespace>.sock`. */
export const LOCK_SOCKET = /^lock\.\d+\.sock$/;

/** A folder's lock, taken. */
export interface HeldLock {
  /** Whether every process that shares the folder is kept out: on Linux once `announce` said so, elsewhere from the
   * start. */
  readonly exclusive: boolean;
  /**
   * Keeps out the processes of every other namespace too, as a transaction that writes must: `null` once done (at
   * once when `exclusive` already), else the name of a lock socket of the folder whose holder is alive, which this
   * lock gave way to (the caller releases it and tries again). Makes this namespace's lock socket in the folder.
   */
  announce(): Promise<string | null>;
  /** The name of a lock socket of another namespace whose holder is alive (its socket answers), or `null` when none
   * is (always `null` elsewhere than Linux). Writes nothing. */
  othersLive(): Promise<string | null>;
  /** Lets the lock go: the folder's lock socket closed and removed first, then the namespace's part. */
  release(): void;
}

/** What the operating system calls the lock of folder `dir` (its real path) whose `stat` is `st`: an abstract socket
 * name on Linux, named after the folder's device and inode (the same in every mount namespace: a volume mounted at
 * another path in a container is the same folder), a pipe name on Windows (named after its path, as before). */
export function lockName(dir: string, st: { dev: number; ino: number }): string {
  if (process.platform === "win32") {
    const id = createHash("sha256").update(`${dir}\0${st.dev}\0${st.ino}`).digest("hex").slice(0, 32);
    return `\\\\?\\pipe\\ldp-telemetry-${id}`;
  }
  const id = createHash("sha256").update(`folder\0${st.dev}\0${st.ino}`).digest("hex").slice(0, 32);
  return `\0ldp-telemetry/${id}`;
}

let namespaceCache: string | undefined;

/** This process's network namespace: the inode of `/proc/self/ns/net`, as digits. */
function networkNamespace(): string {
  if (namespaceCache === undefined) {
    try {
      namespaceCache = String(statSync("/proc/self/ns/net", { bigint: true }).ino);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw Object.assign(new Error("this process's network namespace cannot be told (/proc/self/ns/net: " +
        `${e.code ?? e.message}): without it the lock cannot keep out the processes of other namespaces that share ` +
        "the folder, so nothing is written"), { code: e.code });
    }
  }
  return namespaceCache;
}

/** Listens on `path` (an abstract socket, a pipe or a socket in a folder): the server, or `null` when the name is
 * taken (`EADDRINUSE`). Whoever connects is hung up on at once: a connection only asks whether the holder lives. */
function tryListen(path: string): Promise<Server | null> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once("error", (err: NodeJS.ErrnoException) => (err.code === "EADDRINUSE" ? resolve(null) : reject(err)));
    server.listen({ path, exclusive: true }, () => {
      server.unref();
      resolve(server);
    });
  });
}

/** Whether the socket at `path` has a live holder: it accepts a connection, or fails in a way that proves nothing
 * (a full backlog, a permission). Only `ECONNREFUSED` (nothing listens: its holder died) and `ENOENT` (removed) say
 * it has none. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const done = (live: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(live);
    };
    const timer = setTimeout(() => done(true), PROBE_MS);
    socket.once("connect", () => done(true));
    socket.once("error", (err: NodeJS.ErrnoException) => done(err.code !== "ECONNREFUSED" && err.code !== "ENOENT"));
  });
}

/** Removes the file at `path` if there is one (checked first: a missing file is the common case, and cheap so). */
function removeIfThere(path: string): void {
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return;
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/** A lock the OS keeps for every process of the machine (a pipe, an `O_EXLOCK` file): exclusive from the start. */
class WholeLock implements HeldLock {
  readonly exclusive = true;

  constructor(readonly release: () => void) {}

  announce(): Promise<string | null> {
    return Promise.resolve(null);
  }

  othersLive(): Promise<string | null> {
    return Promise.resolve(null);
  }
}

/** Linux's lock: this network namespace's abstract socket, and once announced, its socket in the folder. */
class SocketLock implements HeldLock {
  exclusive = false;
  private folderSocket: { server: Server; path: string } | null = null;
  private dirFd: number | null = null;

  constructor(private readonly dir: string, private readonly abstract: Server) {}

  /** The address of socket `name` of the folder: its path, or the same file through the folder's descriptor when the
   * path is too long for a socket address. */
  private address(name: string): string {
    const path = join(this.dir, name);
    if (Buffer.byteLength(path) <= MAX_SOCKET_PATH) return path;
    this.dirFd ??= openSync(this.dir, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY);
    return `/proc/self/fd/${this.dirFd}/${name}`;
  }

  /** The first (by name) of the folder's lock sockets other than `own` whose holder is alive, or `null`. */
  private async live(own: string | null): Promise<string | null> {
    const names = readdirSync(this.dir).filter((n) => LOCK_SOCKET.test(n) && n !== own).sort();
    const alive = await Promise.all(names.map((n) => answers(this.address(n))));
    const i = alive.indexOf(true);
    return i < 0 ? null : names[i];
  }

  othersLive(): Promise<string | null> {
    // Held by this namespace's abstract socket, no socket of this namespace can have a live holder.
    return this.live(null);
  }

  async announce(): Promise<string | null> {
    if (this.exclusive) return null;
    const own = `lock.${networkNamespace()}.sock`;
    const busy = await this.live(own); // look first: no socket made only to give way at once
    if (busy !== null) return busy;
    const path = this.address(own);
    // Only this namespace binds its name, under its abstract socket: a socket there is one a killed holder of this
    // namespace left. One that answers would be a process of this namespace the abstract socket did not keep out
    // (the folder seen with another device or inode): never taken over.
    if (lstatSync(path, { throwIfNoEntry: false }) !== undefined) {
      if (await answers(path)) return own;
      removeIfThere(path);
    }
    const server = await tryListen(path);
    if (server === null) return own;
    this.folderSocket = { server, path };
    // Announced: now look. Of two namespaces that both announce, the one that looks last sees the other.
    const other = await this.live(own);
    if (other !== null) {
      this.closeFolderSocket();
      return other;
    }
    this.exclusive = true;
    return null;
  }

  /** Stops listening on this namespace's socket in the folder and removes it (libuv removes it on close; removing
   * it here is for a libuv that does not). */
  private closeFolderSocket(): void {
    if (this.folderSocket === null) return;
    const { server, path } = this.folderSocket;
    this.folderSocket = null;
    this.exclusive = false;
    server.close();
    try {
      removeIfThere(path);
    } catch {
      /* letting go never fails: a socket left is one nothing listens on, which the next writer here replaces */
    }
  }

  release(): void {
    try {
      this.closeFolderSocket();
    } finally {
      if (this.dirFd !== null) closeSync(this.dirFd);
      this.dirFd = null;
      this.abstract.close();
    }
  }
}

function tryExlock(path: string): number | null {
  try {
    return openSync(path, fsConstants.O_RDWR | fsConstants.O_CREAT | fsConstants.O_NONBLOCK | BSD_O_EXLOCK, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EAGAIN" || code === "EWOULDBLOCK") return null;
    throw err;
  }
}

/**
 * Takes the lock of folder `dir` (its real path) once: on Linux and Android this network namespace's abstract socket
 * `name` (`lockName`), on Windows the pipe `name`, on macOS and the BSDs the file `lock` opened with `O_EXLOCK`.
 * `null`: another process holds it. Other platforms have no lock the OS releases: an `Error`.
 */
export async function tryLock(dir: string, name: string): Promise<HeldLock | null> {
  if (["darwin", "freebsd", "openbsd", "netbsd"].includes(process.platform)) {
    const fd = tryExlock(join(dir, "lock"));
    return fd === null ? null : new WholeLock(() => closeSync(fd));
  }
  if (process.platform === "win32") {
    const server = await tryListen(name);
    return server === null ? null : new WholeLock(() => server.close());
  }
  if (process.platform === "linux" || process.platform === "android") {
    const server = await tryListen(name);
    return server === null ? null : new SocketLock(dir, server);
  }
  throw new Error(`FileStore has no lock that the OS releases on ${process.platform}`);
}
