import { randomBytes } from 'node:crypto';

/** A UUID, as ids of stores, apps, installations, clients and subscriptions are. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Store records have `integer` ids: anything beyond cannot exist (and PostgreSQL refuses to compare with it). */
export const MAX_ROW_ID = 2_147_483_647;

/**
 * A store record's id from a path (`^[1-9][0-9]*$`, checked by the spec validator) or a body:
 * undefined when it cannot name a row (not a positive integer in range). Parsed once, at the edge.
 */
export function rowIdOf(id: number | string): number | undefined {
  const rowId = typeof id === 'number' ? id : /^[1-9][0-9]*$/.test(id) ? Number(id) : Number.NaN;
  return Number.isSafeInteger(rowId) && rowId >= 1 && rowId <= MAX_ROW_ID ? rowId : undefined;
}

/** What UUIDv7's 48-bit time field holds at most (epoch ms): the year 10889. */
const UUID_V7_MAX_TIME = 2 ** 48 - 1;
const UUID_V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/**
 * A UUIDv7 (RFC 9562, 5.7): the 48-bit big-endian epoch milliseconds of `at`, the version (7), 74
 * random bits and the variant. Ids made at different instants sort by time as text and as
 * PostgreSQL's `uuid`; ids of one millisecond in random order. Event ids are UUIDv7, so an id
 * tells when its event occurred after the event itself is deleted (`uuidV7Time`). Node 20 has no
 * built-in one.
 */
export function uuidV7(at: number, random: Buffer = randomBytes(10)): string {
  if (!Number.isSafeInteger(at) || at < 0 || at > UUID_V7_MAX_TIME) throw new RangeError(`${at} is not a time a UUIDv7 holds`);
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(at, 0, 6);
  random.copy(bytes, 6, 0, 10);
  bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The epoch milliseconds a UUIDv7 was made at; undefined for any other id (v4 ids carry no time). */
export function uuidV7Time(id: string): number | undefined {
  const match = UUID_V7.exec(id);
  if (!match) return undefined;
  return Number.parseInt(`${match[1]}${match[2]}`, 16);
}

/** The 74 bits a UUIDv7 leaves to randomness, around its version and variant: 12 in rand_a, 62 in rand_b. */
const TAIL_BITS = 74n;

/**
 * UUIDv7s in the order they are made (RFC 9562, 6.2, method 2): an id of the same millisecond as
 * the one made before it takes that one's random bits plus one, so ids of one instant sort in the
 * order of their making, as text and as PostgreSQL's `uuid`. Events one change writes together
 * (`order.paid`, then its `order.updated`) list in the order written. An id of another millisecond
 * starts from fresh random bits.
 */
export function orderedUuidV7s(random: () => Buffer = () => randomBytes(10)): (at: number) => string {
  let lastAt = -1;
  let lastTail = 0n;
  return (at) => {
    let tail: bigint;
    if (at === lastAt && lastTail + 1n < 1n << TAIL_BITS) tail = lastTail + 1n;
    else tail = BigInt(`0x${random().toString('hex')}`) & ((1n << TAIL_BITS) - 1n);
    lastAt = at;
    lastTail = tail;
    // rand_a (12 bits) in the low 12 bits of bytes 6-7, rand_b (62 bits) in the low 62 bits of bytes 8-15.
    const bytes = Buffer.alloc(10);
    bytes.writeUInt16BE(Number(tail >> 62n), 0);
    bytes.writeBigUInt64BE(tail & ((1n << 62n) - 1n), 2);
    return uuidV7(at, bytes);
  };
}
