'use strict';
// ShmkvRedis: an ioredis client whose cacheable reads are answered by
// libshmkv from shmkvd's shared-memory segment, synchronously, with the
// result ioredis would have given. Everything else is plain ioredis.

const IORedis = require('ioredis');
const native = require('./build/Release/shmkv.node');

const Redis = IORedis.Redis || IORedis.default || IORedis;

// The class ioredis gives a RESP error reply: ioredis 6 decodes it as its
// own SimpleError (a ReplyError named "ReplyError"); ioredis 5 as ReplyError.
const ReplyErrorClass = (() => {
  try {
    return require('ioredis/built/resp/errors').SimpleError;
  } catch {
    return IORedis.ReplyError;
  }
})();

// The reads libshmkv answers from shared memory; true: every argument is a
// key (for keyPrefix), false: only the first one.
const SERVED = {
  get: false, mget: true, exists: true, type: false, ttl: false, pttl: false,
  strlen: false, hget: false, hmget: false, hexists: false, hlen: false,
  sismember: false, smismember: false, scard: false, zscore: false,
  zmscore: false, zcard: false, llen: false, lindex: false,
  // Whole collections: libshmkv answers small ones (stored inline) from the
  // segment and sends the others to the daemon. ZRANGE only by index, with
  // at most WITHSCORES (see served()).
  hgetall: false, hkeys: false, hvals: false, smembers: false, lrange: false, zrange: false,
};
// Those whose replies hold strings (the others answer integers).
const STRINGS = new Set(['get', 'mget', 'type', 'hget', 'hmget', 'zscore', 'zmscore', 'lindex',
  'hgetall', 'hkeys', 'hvals', 'smembers', 'lrange', 'zrange']);

const { BUFFERS, INT_STRINGS, LATIN1 } = native;
const OPEN_RETRY_MS = 1000;    // after a handle could not be opened
const NO_CACHE_RETRY_MS = 5000; // after the daemon offered no cache

// An argument as ioredis writes it (its Command's stringifying rules).
function toArg(a) {
  if (typeof a === 'string' || a instanceof Buffer) return a;
  if (a === null || a === undefined) return '';
  if (typeof a === 'number' && Number.isInteger(a) && !Number.isSafeInteger(a)) {
    return BigInt(a).toString();
  }
  return String(a);
}

// A key with ioredis's keyPrefix in front, as ioredis builds it.
function prefixed(prefix, key) {
  if (key instanceof Buffer) {
    return Buffer.concat([prefix instanceof Buffer ? prefix : Buffer.from(prefix), key]);
  }
  if (prefix instanceof Buffer) return Buffer.concat([prefix, Buffer.from(String(key))]);
  return prefix + key;
}

function callLater(cb, err, val) {
  try {
    if (err) cb(err);
    else cb(null, val);
  } catch (e) {
    // As ioredis does: an exception in the callback surfaces uncaught,
    // not as a rejection of the command's promise.
    setTimeout(() => { throw e; }, 0);
  }
}

// Buffers of the Latin-1 strings the addon hands over for them.
function toBuffers(r) {
  if (typeof r === 'string') return Buffer.from(r, 'latin1');
  if (Array.isArray(r)) {
    for (let i = 0; i < r.length; i++) {
      if (typeof r[i] === 'string') r[i] = Buffer.from(r[i], 'latin1');
    }
  }
  return r;
}

// Buffers of the members (even places) of ZRANGE WITHSCORES, its scores
// (odd places) left as they are: strings.
function membersToBuffers(r) {
  if (Array.isArray(r)) {
    for (let i = 0; i < r.length; i += 2) {
      if (typeof r[i] === 'string') r[i] = Buffer.from(r[i], 'latin1');
    }
  }
  return r;
}

// HGETALL's flat [field, value, ...] as ioredis makes an object of it (its
// reply transformer; under RESP3 with replyMapping 'resp3' its decoder
// builds the same object from the map): fields as UTF-8 strings, in the
// order given, a field that names something the object already has
// ('__proto__', 'constructor', ...) defined as an own property. latin1:
// the strings are Latin-1 carriers of bytes (the Buffer variant): fields
// are decoded as UTF-8, values made Buffers.
function toHash(r, latin1) {
  if (!Array.isArray(r)) return latin1 ? toBuffers(r) : r;
  const obj = {};
  for (let i = 0; i < r.length; i += 2) {
    let key = r[i];
    let value = r[i + 1];
    if (latin1) {
      key = typeof key === 'string' ? Buffer.from(key, 'latin1').toString() : String(key);
      if (typeof value === 'string') value = Buffer.from(value, 'latin1');
    }
    if (key in obj) {
      Object.defineProperty(obj, key, { value, configurable: true, enumerable: true, writable: true });
    } else {
      obj[key] = value;
    }
  }
  return obj;
}

// ZRANGE's one option served: WITHSCORES, in any case (ASCII only, as the
// daemon compares it).
const WITHSCORES = /^withscores$/i;
function isWithScores(a) {
  if (typeof a === 'string') return WITHSCORES.test(a);
  return a instanceof Buffer && a.length === 10 && WITHSCORES.test(a.toString('latin1'));
}

// The promise ioredis would return, also reported to a Node-style callback.
function settle(promise, cb) {
  if (cb !== undefined) {
    promise.then((v) => callLater(cb, null, v), (e) => callLater(cb, e));
  }
  return promise;
}

function served(name, buffer) {
  const wire = name.toUpperCase();
  const allKeys = SERVED[name];
  const isScore = name === 'zscore' || name === 'zmscore';
  const strings = STRINGS.has(name);
  const isHash = name === 'hgetall';
  const isZrange = name === 'zrange';
  const viaSocket = Redis.prototype[buffer ? name + 'Buffer' : name];
  return function (...args) {
    const h = this._shmReady();
    if (h === null) return viaSocket.apply(this, args);

    let n = args.length;
    let cb;
    if (n > 0 && typeof args[n - 1] === 'function') {
      cb = args[n - 1];
      n--;
    }
    // ioredis flattens one level of arrays: mget(['a', 'b']), hmget(k, [f]).
    const cmd = [wire];
    for (let i = 0; i < n; i++) {
      const a = args[i];
      if (Array.isArray(a)) for (const x of a) cmd.push(x);
      else cmd.push(a);
    }
    let scores = false;
    if (isZrange) {
      // Served: ZRANGE key start stop [WITHSCORES]. Any other option (REV,
      // BYSCORE, BYLEX, LIMIT) or number of arguments: ioredis.
      if (cmd.length === 5 && isWithScores(cmd[4])) scores = true;
      else if (cmd.length !== 4) return viaSocket.apply(this, args);
    }
    let mode = this._shmMode(buffer, isScore || scores, strings);
    if (mode < 0) return viaSocket.apply(this, args);
    // ZRANGE WITHSCORES over RESP3 with stringNumbers: ioredis makes strings
    // of the scores (RESP3 doubles), Buffers of the members still.
    const scoreStrings = scores && buffer && this.condition.protocol === 3 &&
      Boolean(this.options.stringNumbers);
    if (scoreStrings) mode = LATIN1;

    const prefix = this.options.keyPrefix;
    // ioredis prefixes the first key's place even when no key was given.
    if (prefix && !allKeys && cmd.length === 1) cmd.push(undefined);
    for (let i = 1; i < cmd.length; i++) {
      if (prefix && (allKeys || i === 1)) cmd[i] = prefixed(prefix, cmd[i]);
      cmd[i] = toArg(cmd[i]);
    }

    let r;
    try {
      r = name === 'get' && cmd.length === 2 ? h.get(cmd[1], mode) : h.command(cmd, mode);
    } catch (e) {
      // No answer from the handle (daemon gone, timed out): ioredis sends
      // the read and applies its own reconnection and queueing rules.
      this._shmFailed(e);
      return viaSocket.apply(this, args);
    }
    if (r instanceof Error) {
      const err = new ReplyErrorClass(r.message);
      err.command = { name, args: cmd.slice(1) };
      return settle(Promise.reject(err), cb);
    }
    if (isHash) r = toHash(r, (mode & LATIN1) !== 0);
    else if (scoreStrings) r = membersToBuffers(r);
    else if (mode & LATIN1) r = toBuffers(r);
    return settle(Promise.resolve(r), cb);
  };
}

class ShmkvRedis extends Redis {
  constructor(...args) {
    super(...args);
    this._shm = null;       // the libshmkv handle, opened on the first served read
    this._shmDb = -1;       // the database it has selected
    this._shmBadDb = -1;    // a database it could not select
    this._shmRetryAt = 0;   // no open attempt before this (ms)
    this._shmInMulti = false;
    this._shmSelectInMulti = false;
    this._shmDbUnknown = false;
    // The database the connection has selected, as the commands sent say
    // (ioredis's own record misses SELECT sent in capitals through call()).
    this._shmWantDb = Number(this.options.db) || 0;
    this.on('end', () => this._shmClose());
  }

  // The handle to answer a read with now, or null to send it with ioredis.
  _shmReady() {
    if (this.status !== 'ready' || this.manuallyClosing) return null;
    if (!this.stream || !this.stream.writable) return null;
    // A read must not overtake a command ioredis has not had answered yet
    // (an unawaited SET, a pipeline): ioredis would have answered in order.
    if (this.commandQueue.length !== 0 || this.offlineQueue.length !== 0) return null;
    if (this._autoPipelines !== undefined &&
        (this._autoPipelines.size !== 0 || this._runningAutoPipelines.size !== 0)) return null;
    const c = this.condition;
    if (!c || c.subscriber || this._shmInMulti || this._shmDbUnknown) return null;
    let h = this._shm;
    if (h === null) {
      h = this._shmOpen();
      if (h === null) return null;
    }
    if (this._shmWantDb !== this._shmDb && !this._shmSelect(this._shmWantDb)) return null;
    return h;
  }

  // The reply shape to ask for, or -1 when only ioredis can shape it.
  // isScore: the reply holds scores (ZSCORE, ZMSCORE, ZRANGE WITHSCORES).
  _shmMode(buffer, isScore, strings) {
    const c = this.condition;
    const stringNumbers = this.options.stringNumbers;
    if (isScore && c.protocol === 3) {
      // RESP3 sends scores as doubles: ioredis makes numbers of them with
      // replyMapping "resp3" (and leaves ZRANGE's [member, score] pairs
      // unflattened), and strings (Buffer variants too) with stringNumbers.
      if (c.replyMapping === 'resp3') return -1;
      if (stringNumbers) return 0;
    }
    let mode = stringNumbers ? INT_STRINGS : 0;
    if (buffer) mode |= strings ? LATIN1 : BUFFERS;
    return mode;
  }

  _shmOpen() {
    const o = this.options;
    if (!o.path || o.shm === false || o.monitor) return null; // shm needs the Unix socket
    const now = Date.now();
    if (now < this._shmRetryAt) return null;
    const db = this._shmWantDb;
    let h;
    try {
      h = new native.Handle(o.path, {
        password: typeof o.password === 'string' ? o.password : undefined,
        username: typeof o.username === 'string' ? o.username : undefined,
        db,
        timeoutMs: o.shmTimeout ?? 500,
      });
    } catch {
      this._shmRetryAt = now + OPEN_RETRY_MS;
      return null;
    }
    if (h.cacheError() !== null) {
      // Without the segment every read would be a blocking round trip:
      // ioredis does those better, asynchronously.
      h.close();
      this._shmRetryAt = now + NO_CACHE_RETRY_MS;
      return null;
    }
    this._shm = h;
    this._shmDb = db;
    this._shmBadDb = -1;
    return h;
  }

  _shmSelect(db) {
    if (db === this._shmBadDb) return false;
    let r;
    try {
      r = this._shm.command(['SELECT', String(db)], 0);
    } catch (e) {
      this._shmFailed(e);
      return false;
    }
    if (r instanceof Error) {
      this._shmBadDb = db;
      return false;
    }
    this._shmDb = db;
    return true;
  }

  _shmFailed(e) {
    // libshmkv reconnects by itself on the next call; a daemon that refuses
    // connections is not asked again for a moment.
    if (e && e.code === 'SHMKV_ECONNECT') this._shmRetryAt = Date.now() + OPEN_RETRY_MS;
    if (e && e.code === 'SHMKV_ECONNECT' && this._shm !== null) this._shmClose();
  }

  _shmClose() {
    if (this._shm !== null) {
      this._shm.close();
      this._shm = null;
      this._shmDb = -1;
    }
  }

  // Keeps track of what the handle must follow: the database selected, a
  // MULTI open (its reads are queued, not answered), a RESET (back to
  // database 0, which ioredis does not note), a SELECT inside a transaction
  // (whether it ran depends on EXEC).
  sendCommand(command, stream) {
    const name = command.name;
    if (name.length <= 7) {
      switch (name.toLowerCase()) {
        case 'multi':
          this._shmInMulti = true;
          break;
        case 'exec':
        case 'discard':
          if (this._shmSelectInMulti) this._shmDbUnknown = true;
          this._shmInMulti = this._shmSelectInMulti = false;
          break;
        case 'reset':
          this._shmInMulti = this._shmSelectInMulti = false;
          this._shmWantDb = 0;
          break;
        case 'select': {
          const a = command.args[0];
          const db = typeof a === 'number' ? a : Number.parseInt(String(a), 10);
          if (this._shmInMulti) {
            this._shmSelectInMulti = true;
          } else if (Number.isSafeInteger(db) && String(db) === String(a)) {
            this._shmWantDb = db;
            this._shmDbUnknown = false;
          } else {
            this._shmDbUnknown = true; // the daemon decides what it means
          }
          break;
        }
        default:
      }
    }
    return super.sendCommand(command, stream);
  }

  duplicate(override) {
    return new ShmkvRedis({ ...this.options, ...(override ?? {}) });
  }

  // The libshmkv handle this client reads with, opened if need be, or null
  // when reads go through ioredis now. Its get(key) is synchronous.
  shmHandle() {
    return this._shmReady();
  }

  // The handle's counters ({hits, misses, retries, commands, attaches}),
  // or null before it is opened.
  shmStats() {
    return this._shm === null ? null : this._shm.stats();
  }
}

for (const name of Object.keys(SERVED)) {
  ShmkvRedis.prototype[name] = served(name, false);
  ShmkvRedis.prototype[name + 'Buffer'] = served(name, true);
}

// Named exports beside the class, as ioredis has them. Defined rather than
// assigned: the class inherits read-only static getters from Redis.
const extra = {
  ShmkvRedis, default: ShmkvRedis, Handle: native.Handle, Redis,
  ReplyError: IORedis.ReplyError, SERVED: Object.keys(SERVED), BUFFERS, INT_STRINGS, LATIN1,
};
for (const [k, v] of Object.entries(extra)) {
  Object.defineProperty(ShmkvRedis, k, { value: v, enumerable: true });
}
module.exports = ShmkvRedis;
