/** Messages between the bench (parent) and its server processes (children), over the fork IPC channel. */

/** A child is listening. */
export interface ReadyMessage {
  type: 'ready';
  port: number;
}

/** What the bench's store holds (kept between runs with its SQLite file). */
export interface BenchData {
  storeId: string;
  ownerId: string;
  /** The lowest and highest product id of the seeded store. */
  productIds: { first: number; last: number };
  /** How long seeding the products took when the store was built. */
  seedMs: number;
  /** The simulated orders (none when BENCH_ORDERS is 0): how many, their days (epoch ms, `to` exclusive), how long the simulation took. */
  orders: { count: number; from: number; to: number; simulationMs: number } | undefined;
}

/** The store API server is listening with its store and an installed app. */
export interface StoreReadyMessage extends ReadyMessage, BenchData {
  accessToken: string;
  /** Whether this run built the store (else it was kept from an earlier run). */
  built: boolean;
}

/** The first-start server (first-start.ts) is listening with the demo store; it simulates its history after a while. */
export interface FirstStartReadyMessage extends ReadyMessage {
  /** What to read, in turn: products of the demo store, spread over its catalog, and its first orders. */
  paths: string[];
  /** Holds `products:read` and `orders:read`. */
  accessToken: string;
}

/** The first-start simulation began. */
export interface SimulatingMessage {
  type: 'simulating';
}

/** The first-start simulation ended. */
export interface SimulatedMessage {
  type: 'simulated';
  orders: number;
  simulationMs: number;
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

export type ChildMessage =
  | ReadyMessage
  | StoreReadyMessage
  | FirstStartReadyMessage
  | SimulatingMessage
  | SimulatedMessage
  | TokenMessage
  | ProfiledMessage
  | CpuMessage
  | FailedMessage;

export type ParentMessage = { type: 'token' } | { type: 'cpu' } | { type: 'profile-start' } | { type: 'profile-stop'; file: string } | { type: 'stop' };
