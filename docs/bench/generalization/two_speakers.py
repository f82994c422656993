#!/usr/bin/env python3
"""Rewrites make bench-native's profile as one of two speakers (names.txt).

    python3 docs/bench/generalization/two_speakers.py target/bench-native target/bench-native-2sp

Every role of the fill is mapped to "Maria" or "John" (alternately, by
sorted name), in the messages' roles and in every text and query that
names one; message ids are computed again as the service computes them
(SHA-256 over session, role and content, each prefixed by its byte
length; a repeat within a session adds "repeat" and its number) and the
memories' sources follow. The result is a profile of 100k memories where a
question naming a speaker names one who said about half of it.
"""
import hashlib, json, os, re, shutil, struct, sys

src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
records = [json.loads(l) for l in open(f'{src}/fill.ndjson') if l.strip()]
roles = sorted({r['role'] for r in records if r.get('kind') == 'message'})
mapping = {n: ('Maria' if i % 2 == 0 else 'John') for i, n in enumerate(roles)}
names = re.compile(r'\b(' + '|'.join(map(re.escape, roles)) + r')\b')


def renamed(text):
    return names.sub(lambda m: mapping[m.group(1)], text)


def message_id(session, role, content, n):
    h = hashlib.sha256()
    for field in [session, role, content] + (['repeat', str(n)] if n else []):
        b = field.encode()
        h.update(struct.pack('>Q', len(b)))
        h.update(b)
    return h.hexdigest()[:32]


new_id, seen = {}, {}
for r in records:
    if r.get('kind') == 'message':
        r['role'], r['content'] = mapping[r['role']], renamed(r['content'])
        key = (r['sessionId'], r['role'], r['content'])
        n = seen.get(key, 0)
        seen[key] = n + 1
        new_id[r['id']] = r['id'] = message_id(*key, n)
for r in records:
    if r.get('kind') == 'memory':
        for k in ('content', 'summary'):
            if isinstance(r.get(k), str):
                r[k] = renamed(r[k])
        r['sourceMessageIds'] = [new_id.get(i, i) for i in r.get('sourceMessageIds', [])]
with open(f'{dst}/fill.ndjson', 'w') as f:
    f.write(''.join(json.dumps(r) + '\n' for r in records))
queries = [renamed(q) for q in json.load(open(f'{src}/queries.json'))]
json.dump(queries, open(f'{dst}/queries.json', 'w'))
shutil.copy(f'{src}/ingest.json', f'{dst}/ingest.json')
print(f'{len(roles)} roles -> 2; {sum(("Maria" in q or "John" in q) for q in queries)} of {len(queries)} queries name one')
