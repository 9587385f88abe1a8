// An independent implementation of the spec's constructions in JavaScript, using
// only Node's built-in WebCrypto, as the protocol's real clients do. simkit's
// tests send it one JSON request per line on stdin and read one JSON answer per
// line on stdout. Written from the spec, not translated from simkit's Python.
import { createInterface } from 'node:readline';
import { createHash } from 'node:crypto';

const { subtle } = globalThis.crypto;
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

// canonicalJson as a JavaScript client writes it: rebuild objects with sorted keys, then JSON.stringify.
function sortDeep(v) {
  if (Array.isArray(v)) return v.map(sortDeep);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortDeep(v[k])]));
  }
  return v;
}
const canonicalJson = (v) => JSON.stringify(sortDeep(v));

const b64u = (bytes) => Buffer.from(bytes).toString('base64url');
const unb64u = (s) => new Uint8Array(Buffer.from(s, 'base64url'));
const sha256 = async (bytes) => new Uint8Array(await subtle.digest('SHA-256', bytes));

const ECDSA = { name: 'ECDSA', namedCurve: 'P-256' };
const ECDH = { name: 'ECDH', namedCurve: 'P-256' };
const SIGN = { name: 'ECDSA', hash: 'SHA-256' };

async function aesKey(raw) {
  return subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']);
}

function signingBytes(storageKey, record) {
  return enc.encode('skm-record-v1\n' + storageKey + '\n' + canonicalJson(record));
}

async function sealSign({ graphKey, storageKey, record, deviceId, sigPrivJwk }) {
  const priv = await subtle.importKey('jwk', sigPrivJwk, ECDSA, false, ['sign']);
  const s = b64u(new Uint8Array(await subtle.sign(SIGN, priv, signingBytes(storageKey, record))));
  const envelope = { v: 1, r: record, d: deviceId, s };
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const c = await subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: enc.encode(storageKey + '/' + record.id) },
    await aesKey(unb64u(graphKey)),
    enc.encode(canonicalJson(envelope)),
  );
  return { n: b64u(iv), c: b64u(new Uint8Array(c)), s };
}

async function openVerify({ graphKey, storageKey, recordId, n, c, sigPubJwk }) {
  const plain = await subtle.decrypt(
    { name: 'AES-GCM', iv: unb64u(n), additionalData: enc.encode(storageKey + '/' + recordId) },
    await aesKey(unb64u(graphKey)),
    unb64u(c),
  );
  const envelope = JSON.parse(dec.decode(plain));
  const pub = await subtle.importKey('jwk', sigPubJwk, ECDSA, false, ['verify']);
  const verified = await subtle.verify(SIGN, pub, unb64u(envelope.s), signingBytes(storageKey, envelope.r));
  return { envelope: canonicalJson(envelope), verified };
}

async function kek(privateKey, publicKey) {
  const shared = await subtle.deriveBits({ name: 'ECDH', public: publicKey }, privateKey, 256);
  const hkdf = await subtle.importKey('raw', shared, 'HKDF', false, ['deriveKey']);
  return subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: enc.encode('skm-wrap-v1') },
    hkdf, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'],
  );
}

async function wrap({ graphKey, pubJwk }) {
  const recipient = await subtle.importKey('jwk', pubJwk, ECDH, false, []);
  const eph = await subtle.generateKey(ECDH, true, ['deriveBits']);
  const { crv, kty, x, y } = await subtle.exportKey('jwk', eph.publicKey);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const c = await subtle.encrypt({ name: 'AES-GCM', iv }, await kek(eph.privateKey, recipient), unb64u(graphKey));
  const body = { c: b64u(new Uint8Array(c)), epk: b64u(enc.encode(canonicalJson({ crv, kty, x, y }))), n: b64u(iv) };
  return { wrapped: b64u(enc.encode(canonicalJson(body))) };
}

async function unwrap({ wrapped, privJwk }) {
  const body = JSON.parse(dec.decode(unb64u(wrapped)));
  const epk = await subtle.importKey('jwk', JSON.parse(dec.decode(unb64u(body.epk))), ECDH, false, []);
  const priv = await subtle.importKey('jwk', privJwk, ECDH, false, ['deriveBits']);
  const key = await subtle.decrypt({ name: 'AES-GCM', iv: unb64u(body.n) }, await kek(priv, epk), unb64u(body.c));
  return { graphKey: b64u(new Uint8Array(key)) };
}

async function thumbprint({ crv, kty, x, y }) {
  return b64u(await sha256(enc.encode(JSON.stringify({ crv, kty, x, y }))));
}

async function pbkdf2(password, salt, bits) {
  const base = await subtle.importKey('raw', enc.encode(password), 'PBKDF2', false, ['deriveBits']);
  return new Uint8Array(await subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations: 310000 }, base, bits));
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
async function identity({ memberId, pubJwk, sigJwk, selfSig }) {
  const fingerprint = b64u(await sha256(enc.encode(
    'skm-device-v1\n' + memberId + '\n' + (await thumbprint(pubJwk)) + '\n' + (await thumbprint(sigJwk)))));
  let value = new DataView((await pbkdf2(fingerprint, enc.encode('skm-pair-v1'), 64)).buffer).getBigUint64(0) >> 4n;
  let code = '';
  for (let i = 11; i >= 0; i--) code += CROCKFORD[Number((value >> BigInt(5 * i)) & 31n)];
  const pub = await subtle.importKey('jwk', sigJwk, ECDSA, false, ['verify']);
  const selfSigOk = await subtle.verify(SIGN, pub, unb64u(selfSig), enc.encode('skm-device-self-v1\n' + fingerprint));
  return { thumbPub: await thumbprint(pubJwk), thumbSig: await thumbprint(sigJwk), fingerprint, pairingCode: code, selfSigOk };
}

async function derivedTag({ key, label, data }) {
  const base = await subtle.importKey('raw', unb64u(key), 'HKDF', false, ['deriveKey']);
  const mac = await subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: enc.encode(label) },
    base, { name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign'],
  );
  const digest = new Uint8Array(await subtle.sign('HMAC', mac, enc.encode(data)));
  return { tag: b64u(digest.slice(0, 17)).slice(0, 22) };
}

async function logChain({ storageKey, entries }) {
  let head = b64u(await sha256(enc.encode('skm-log-v1\ngenesis\n' + storageKey)));
  const heads = [head];
  for (const { seq, recordId, rev } of entries) {
    head = b64u(await sha256(enc.encode('skm-log-v1\n' + head + '\n' + seq + '\n' + recordId + '\n' + rev)));
    heads.push(head);
  }
  return { heads };
}

async function openBox({ secret, box }) {
  const raw = unb64u(box.sealed);
  const bits = await pbkdf2(secret, unb64u(box.salt), 256);
  const plain = await subtle.decrypt({ name: 'AES-GCM', iv: raw.slice(0, 12) }, await aesKey(bits), raw.slice(12));
  return { payload: canonicalJson(JSON.parse(dec.decode(plain))) };
}

async function sealBox({ secret, payload }) {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const c = await subtle.encrypt({ name: 'AES-GCM', iv }, await aesKey(await pbkdf2(secret, salt, 256)), enc.encode(canonicalJson(payload)));
  return { box: { v: 1, salt: b64u(salt), sealed: b64u(new Uint8Array([...iv, ...new Uint8Array(c)])) } };
}

async function hkdf({ ikm, salt, info, length }) {
  const base = await subtle.importKey('raw', unb64u(ikm), 'HKDF', false, ['deriveBits']);
  const out = await subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: unb64u(salt), info: unb64u(info) }, base, length * 8);
  return { okm: b64u(new Uint8Array(out)) };
}

async function blob({ graphKey, storageKey, blobId, nonce, ciphertext }) {
  const plain = await subtle.decrypt(
    { name: 'AES-GCM', iv: unb64u(nonce), additionalData: enc.encode(storageKey + '/blob/' + blobId) },
    await aesKey(unb64u(graphKey)), unb64u(ciphertext));
  return { data: b64u(new Uint8Array(plain)) };
}

// Non-finite numbers cannot cross JSON: they travel as {"\u0000n": "NaN" | "Infinity" | "-Infinity"}.
const revive = (k, v) => (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '\u0000n' in v ? Number(v['\u0000n']) : v);

const ops = {
  canonical: async ({ value }) => ({ text: canonicalJson(value) }),
  sealSign, openVerify, wrap, unwrap, identity, derivedTag, logChain, openBox, sealBox, hkdf, blob,
  sha256hex: async ({ data }) => ({ hex: createHash('sha256').update(unb64u(data)).digest('hex') }),
};

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  let answer;
  try {
    const { op, args } = JSON.parse(line, revive);
    answer = { ok: await ops[op](args) };
  } catch (err) {
    answer = { error: String(err && err.message || err) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
