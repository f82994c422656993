import json, urllib.request, math, random
def emb(texts):
    out=[]
    for i in range(0,len(texts),64):
        req=urllib.request.Request("http://127.0.0.1:8811/v1/embeddings",data=json.dumps({"input":texts[i:i+64],"model":"all-MiniLM-L6-v2"}).encode(),headers={"content-type":"application/json"})
        out+= [d["embedding"] for d in json.load(urllib.request.urlopen(req))["data"]]
    return out
def cos(a,b): return sum(x*y for x,y in zip(a,b))/math.sqrt(sum(x*x for x in a)*sum(y*y for y in b))
d=json.load(open('../shared/bench/locomo/locomo-dev.json'))
import numpy as np
turns=[]
for c in d:
    t=[]
    for k,v in c['conversation'].items():
        if k.startswith('session_') and isinstance(v,list):
            for x in v: t.append((x['dia_id'],x.get('text','')))
    turns.append(t)
T=[np.array(emb([x[1] for x in t])) for t in turns]
T=[a/np.linalg.norm(a,axis=1,keepdims=True) for a in T]
rel=[];own=[];other=[]
for ci,c in enumerate(d):
    qs=[q['question'] for q in c['qa']]
    Q=np.array(emb(qs)); Q/=np.linalg.norm(Q,axis=1,keepdims=True)
    S=Q@T[ci].T; So=Q@T[(ci+1)%len(d)].T
    ids=[x[0] for x in turns[ci]]
    for qi,q in enumerate(c['qa']):
        for e in q['evidence']:
            if e in ids: rel.append(S[qi,ids.index(e)])
        own.append(S[qi].max()); other.append(So[qi].max())
general=["Who won the 1998 World Cup?","How tall is Mount Everest?","xylophone zeppelin quasar","What is the capital of Australia?","team conventions","How do I reset my router password?","What is the boiling point of mercury?","Explain quantum entanglement simply.","What is the airspeed of a swallow?","Which database does the billing service use?","What is our deployment schedule?","Recommend a good sci-fi novel."]
G=np.array(emb(general)); G/=np.linalg.norm(G,axis=1,keepdims=True)
gen=[ (G@t.T).max(axis=1) for t in T]; gen=np.concatenate(gen)
for name,v in [("relevant",rel),("own best",own),("other conv best",other),("general best",gen)]:
    v=np.array(v); print(f"{name:16} n={len(v)} p05={np.percentile(v,5):.3f} p10={np.percentile(v,10):.3f} p25={np.percentile(v,25):.3f} p50={np.percentile(v,50):.3f} p90={np.percentile(v,90):.3f} max={v.max():.3f}")
rel=np.array(rel)
for f in [0.2,0.25,0.3,0.35,0.4,0.45]:
    print(f"floor {f}: relevant below {np.mean(rel<f):.3f}; own best below {np.mean(np.array(own)<f):.3f}; general best at/above {np.mean(gen>=f):.3f}; other-conv best at/above {np.mean(np.array(other)>=f):.3f}")
