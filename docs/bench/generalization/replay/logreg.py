#!/usr/bin/env python3
"""Variant 7: cross-validated logistic regression over per-channel features.

    python3 logreg.py <dump dir> [lr] [l2] [pair]

Run from the crate root (imports draws.py, replay.py, variants.py from this
folder). Pure Python (no numpy): Newton / IRLS with a hand-written solver.

For every candidate (the union of the key, fts, vector and messages
channels' hits, each id at its first place), the features are
  bias;
  for fts and vector: present, 11/(10+rank) (1 at rank 1, 0 absent),
      ln(rank) (0 absent), max(score,0)/top score (0 absent);
  for messages: present, 11/(10+rank), ln(rank) (its score is its rank);
  for key: present, 11/(10+rank) / holders of the key (kept's split);
  agree10: how many of fts, vector, messages have the id in their first 10.
Label: the candidate cites an evidence turn (replay's relevant()).
The fused order is by w.x (= by predicted probability), then crowding,
placement and counting are replay.py's (variants.finish / rp.place).

  lr    pointwise logistic regression, ridge 1e-6 (numerical only)
  l2    the same, L2 on standardized coefficients, lambda = L2LAM x rows
  pair  pairwise logistic (RankNet-style, linear): for each training
        question, every evidence candidate against the non-evidence
        candidates in kept fusion's first 30 plus 20 random others;
        each question weighs 1 in total.
Fitted on the odd half (odd seeds + LoCoMo odd-index questions) and tested
on the even half (even seeds + dev draws + LoCoMo even), and the reverse;
the two-fold table scores every question by the model that did not see it.
"""
import collections, math, os, random, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import draws as dr  # noqa: E402
import replay as rp  # noqa: E402
import variants as va  # noqa: E402

NAMES = ['bias',
         'fts.present', 'fts.rr', 'fts.logr', 'fts.s/top',
         'vec.present', 'vec.rr', 'vec.logr', 'vec.s/top',
         'msg.present', 'msg.rr', 'msg.logr',
         'key.present', 'key.rr/holders',
         'agree10']
D = len(NAMES)
L2LAM = 0.01
INS = [False]


def rr_of(name):
    return 40 if 'rerank kept 40' in name else None


def featurize(q):
    """{id: feature list}, {id: label}, src."""
    f = {}
    holders = rp.key_holders(q)
    ranks = collections.defaultdict(dict)
    for ch in va.FUSED:
        hits = va.hits_of(q, ch)
        vals = [h['score'] for h in hits if h['score'] is not None]
        top = max(vals) if vals else 0
        for h in hits:
            i = h['id']
            if i not in f:
                f[i] = [0.0] * D
                f[i][0] = 1.0
            x, r = f[i], h['rank']
            ranks[i][ch] = r
            if ch == 'fts' or ch == 'vector':
                b = 1 if ch == 'fts' else 5
                x[b] = 1.0
                x[b + 1] = 11.0 / (10.0 + r)
                x[b + 2] = math.log(r)
                x[b + 3] = max(h['score'], 0) / top if top > 0 else 1.0
            elif ch == 'messages':
                x[9] = 1.0
                x[10] = 11.0 / (10.0 + r)
                x[11] = math.log(r)
            elif ch == 'key':
                x[12] = 1.0
                x[13] = 11.0 / (10.0 + r) / holders[h['score']]
    for i, rs in ranks.items():
        f[i][14] = float(sum(1 for ch in ('fts', 'vector', 'messages') if rs.get(ch, 999) <= 10))
    src = va.srcs(q)
    y = {i: 1.0 if va.relevant(q, src[i]) else 0.0 for i in f}
    return f, y, src


def solve(A, b):
    n = len(b)
    M = [row[:] + [b[k]] for k, row in enumerate(A)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c]))
        M[c], M[p] = M[p], M[c]
        piv = M[c][c]
        if abs(piv) < 1e-300:
            continue
        for r in range(c + 1, n):
            f = M[r][c] / piv
            if f:
                Mr, Mc = M[r], M[c]
                for k in range(c, n + 1):
                    Mr[k] -= f * Mc[k]
    x = [0.0] * n
    for c in range(n - 1, -1, -1):
        s = M[c][n] - sum(M[c][k] * x[k] for k in range(c + 1, n))
        x[c] = s / M[c][c] if abs(M[c][c]) > 1e-300 else 0.0
    return x


def sigmoid(z):
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def newton(rows, ys, ws, pen, iters=30, tol=1e-7):
    """Weighted logistic regression by Newton's method. rows: sparse rows
    [(idx, val)...]; ys: labels; ws: row weights; pen: per-coefficient
    ridge (added to the Hessian diagonal, 0.5 pen w^2 to the loss)."""
    w = [0.0] * D
    last = None
    for it in range(iters):
        g = [pen[j] * w[j] for j in range(D)]
        H = [[0.0] * D for _ in range(D)]
        for k in range(D):
            H[k][k] = pen[k]
        loss = 0.5 * sum(pen[j] * w[j] * w[j] for j in range(D))
        for x, y, wt in zip(rows, ys, ws):
            z = 0.0
            for j, v in x:
                z += w[j] * v
            p = sigmoid(z)
            loss += wt * (math.log1p(math.exp(-abs(z))) + max(z, 0) - y * z)
            e = wt * (p - y)
            h = wt * p * (1 - p)
            for a, (j, v) in enumerate(x):
                g[j] += e * v
                hv = h * v
                Hj = H[j]
                for k, u in x[a:]:
                    Hj[k] += hv * u
        for j in range(D):  # symmetrize (the loop fills one triangle per row order)
            for k in range(j + 1, D):
                s = H[j][k] + H[k][j]
                H[j][k] = H[k][j] = s
        step = solve(H, g)
        # damped: halve until the loss does not rise (rarely needed)
        w = [w[j] - step[j] for j in range(D)]
        print(f'    it {it} loss {loss:.4f} |step| {max(abs(s) for s in step):.2e}', file=sys.stderr, flush=True)
        if last is not None and abs(last - loss) < tol * max(1.0, abs(loss)):
            break
        last = loss
    return w


def sparse(x):
    return [(j, v) for j, v in enumerate(x) if v != 0.0]


def stds(rows_dense):
    n = len(rows_dense)
    mu = [sum(x[j] for x in rows_dense) / n for j in range(D)]
    return [math.sqrt(max(sum((x[j] - mu[j]) ** 2 for x in rows_dense) / n, 1e-12)) for j in range(D)]


def fit_point(train, lam):
    dense, ys = [], []
    for q in train:
        f, y, _ = q['_feat']
        for i, x in f.items():
            dense.append(x)
            ys.append(y[i])
    sd = stds(dense)
    n = len(dense)
    pen = [0.0] + [(lam * n * sd[j] ** 2 if lam else 1e-6 * n) for j in range(1, D)]
    pen[0] = 1e-6 * n
    w = newton([sparse(x) for x in dense], ys, [1.0] * n, pen)
    return w, sd, n, sum(ys)


def fit_pair(train, seed=0, top=None):
    """top: both sides drawn from kept fusion's first `top` candidates only
    (evidence and non-evidence), instead of every evidence candidate against
    kept's first 30 non-evidence + 20 random others."""
    rnd = random.Random(seed)
    rows, ws = [], []
    dense = []
    for q in train:
        f, y, _ = q['_feat']
        sc = va.rrf_scores(q)
        order = sorted(sc, key=lambda i: (sc[i], i), reverse=True)
        if top:
            pos = [i for i in order[:top] if y[i]]
            negs = [i for i in order[:top] if not y[i]]
        else:
            pos = [i for i in f if y[i]]
            negs = [i for i in order[:30] if not y[i]]
            rest = [i for i in order[30:] if not y[i]]
            negs += rnd.sample(rest, min(20, len(rest)))
        if not pos:
            continue
        if not negs:
            continue
        wt = 1.0 / (len(pos) * len(negs))
        for p in pos:
            for m in negs:
                d = [a - b for a, b in zip(f[p], f[m])]
                rows.append(sparse(d))
                ws.append(wt)
                dense.append(d)
    nq = sum(ws)
    # rows with y = 1 (evidence above non-evidence); no intercept (bias diff = 0)
    pen = [1e-6 * nq] * D
    w = newton(rows, [1.0] * len(rows), ws, pen)
    return w, stds([x for x in (q['_feat'][0][i] for q in train for i in q['_feat'][0])]), len(rows), nq


def scorer(w, rerank=None):
    """Order by w.x; with rerank=n, only kept fusion's first n candidates
    are reordered by w.x, the rest follow in kept's order."""
    def fn(q):
        f, _, src = q['_feat']
        if rerank:
            sc = va.rrf_scores(q)
            order = sorted(sc, key=lambda i: (sc[i], i), reverse=True)
            head = sorted(order[:rerank], key=lambda i: (sum(a * b for a, b in zip(w, f[i])), i), reverse=True)
            return rp.place(q, head + order[rerank:], src)
        sc = {i: sum(a * b for a, b in zip(w, x)) for i, x in f.items()}
        return va.finish(q, sc, src)
    return fn


def show(name, fits):
    print(f'\n{name}: coefficients (raw feature scale; [std-scaled = coef x feature sd])')
    print(f'{"feature":16s}' + ''.join(f'{h:>22s}' for h in fits))
    for j, nm in enumerate(NAMES):
        cells = []
        for h, (w, sd, n, npos) in fits.items():
            cells.append(f'{w[j]:10.3f} [{w[j] * sd[j] if j else w[j]:8.3f}]  ')
        print(f'{nm:16s}' + ''.join(f'{c:>22s}' for c in cells))
    for h, (w, sd, n, npos) in fits.items():
        print(f'  {h}: {n} training rows, {npos:.0f} positive (or question weight)')


def main():
    d = sys.argv[1]
    wanted = sys.argv[2:] or ['lr', 'l2', 'pair']
    t0 = time.time()
    data = dr.load(d, 'hash')
    for qs in data.values():
        for q in qs:
            q['_feat'] = featurize(q)
    print(f'# loaded and featurized in {time.time() - t0:.0f}s', file=sys.stderr, flush=True)
    odd, even = va.half(data, True), va.half(data, False)
    tr = {'odd': [q for qs in odd.values() for q in qs], 'even': [q for qs in even.values() for q in qs]}
    oddset = {id(q) for q in tr['odd']}
    variants = []
    if 'lr' in wanted:
        variants.append(('v7 logistic, pointwise', lambda t: fit_point(t, 0.0)))
    if 'l2' in wanted:
        variants.append((f'v7b logistic, L2 {L2LAM:g}', lambda t: fit_point(t, L2LAM)))
    if 'pair' in wanted:
        variants.append(('v7c logistic, pairwise', lambda t: fit_pair(t)))
    if 'pair40' in wanted:
        variants.append(('v7c pairwise, rerank kept 40', lambda t: fit_pair(t, top=40)))
    if 'insample' in wanted:
        INS[0] = True
    models = {}
    for name, fitter in variants:
        for h in ['odd', 'even']:
            t = time.time()
            print(f'# fitting {name} on the {h} half', file=sys.stderr, flush=True)
            models[(name, h)] = fitter(tr[h])
            print(f'#   {time.time() - t:.0f}s', file=sys.stderr, flush=True)
    fixed = [('kept', va.kept)]
    va.table(data, 'two-fold: every question scored by the model fitted on the other half', fixed + [
        (name, lambda q, name=name: scorer(models[(name, 'even' if id(q) in oddset else 'odd')][0], rr_of(name))(q)) for name, _ in variants])
    va.table(even, 'held out: even half (even seeds + dev + LoCoMo even), fitted on the odd half', fixed + [
        (name, scorer(models[(name, 'odd')][0], rr_of(name))) for name, _ in variants])
    va.table(odd, 'held out: odd half (odd seeds + LoCoMo odd), fitted on the even half', fixed + [
        (name, scorer(models[(name, 'even')][0], rr_of(name))) for name, _ in variants])
    if INS[0]:
        va.table(data, 'in-sample (diagnostic): every question scored by the model fitted on its own half', fixed + [
            (name, lambda q, name=name: scorer(models[(name, 'odd' if id(q) in oddset else 'even')][0], rr_of(name))(q)) for name, _ in variants])
    for name, _ in variants:
        show(name, {f'fit on {h}': models[(name, h)] for h in ['odd', 'even']})
        # per-question wins/losses against fts, two-fold
        for style in ['locomo', 'long-answers']:
            won = lost = 0
            for q in data[style]:
                a = rp.alone(q, 'fts')
                b = scorer(models[(name, 'even' if id(q) in oddset else 'odd')][0], rr_of(name))(q)
                won += b > a + 1e-9
                lost += b < a - 1e-9
            print(f'  two-fold vs fts alone, {style}: won {won} lost {lost}')
    print(f'# total {time.time() - t0:.0f}s', file=sys.stderr)


if __name__ == '__main__':
    main()
