/** Messages between the bench (parent) and its server processes (children), over the fork IPC channel. */

/** A child is listening. */
export interface ReadyMessage {
  type: 'ready';
  port: number;
}

/** The store API server is listening with its seeded store and an installed app. */
export interface StoreReadyMessage extends ReadyMessage {
  storeId: string;
  accessToken: string;
  /** The lowest and highest product id of the seeded store. */
  productIds: { first: number; last: number };
  /** How long seeding the products took. */
  seedMs: number;
}

/** A fresh access token (tokens live 900 s; long runs ask again before each case). */
export interface TokenMessage {
  type: 'token';
  accessToken: string;
}

/** A CPU profile of the server process over one case was written here. */
export interface ProfiledMessage {
  type: 'profiled';
  file: string;
}

/** The process's CPU time so far (all its threads: the event loop, and SQLite's work on the libuv pool). */
export interface CpuMessage {
  type: 'cpu';
  user: number;
  system: number;
}

export interface FailedMessage {
  type: 'failed';
  message: string;
}

export type ChildMessage = ReadyMessage | StoreReadyMessage | TokenMessage | ProfiledMessage | CpuMessage | FailedMessage;

export type ParentMessage = { type: 'token' } | { type: 'cpu' } | { type: 'profile-start' } | { type: 'profile-stop'; file: string } | { type: 'stop' };
