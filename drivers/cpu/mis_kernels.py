"""Compiled (numba) kernels of the `anytime` MIS solver: greedy start, ARW iterated local search,
and the int64 cost check. Plain functions over CSR arrays so that numba compiles them once
(``cache=True`` keeps the machine code between processes); :mod:`.anytime` drives them.

Solution state: ``in_set[v]`` (0/1) and ``tight[v]`` = number of neighbours of ``v`` in the set.
A vertex outside the set with ``tight == 0`` is *free* (can be inserted as is); with ``tight == 1``
it is *1-tight*. A (1,2)-swap (Andrade, Resende & Werneck, "Fast local search for the maximum
independent set problem", J. Heuristics 2012) removes one set vertex ``x`` and inserts two
non-adjacent 1-tight neighbours of ``x``: the set grows by one.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _insert(v, in_set, tight, indptr, indices):
    in_set[v] = 1
    for k in range(indptr[v], indptr[v + 1]):
        tight[indices[k]] += 1


@njit(cache=True, nogil=True)
def _remove(v, in_set, tight, indptr, indices):
    in_set[v] = 0
    for k in range(indptr[v], indptr[v + 1]):
        tight[indices[k]] -= 1


@njit(cache=True, nogil=True)
def seed_rng(seed):
    np.random.seed(seed)


@njit(cache=True, nogil=True)
def greedy(indptr, indices, in_set, tight):
    """Static minimum-degree greedy with random tie-breaks; returns the set size."""
    n = in_set.shape[0]
    in_set[:] = 0
    tight[:] = 0
    keys = np.empty(n, dtype=np.float64)
    for v in range(n):
        keys[v] = (indptr[v + 1] - indptr[v]) + np.random.random()
    size = 0
    for v in np.argsort(keys):
        if tight[v] == 0:
            _insert(v, in_set, tight, indptr, indices)
            size += 1
    return size


@njit(cache=True, nogil=True)
def _push(stack, top, v):
    """Queue ``v`` for local search; when the queue is full the candidate is dropped, which
    only forgoes a possible improvement. A repeat of the last queued vertex is dropped too: on
    dense graphs every 1-tight neighbour of a removed vertex names the same set vertex, and
    searching it once per neighbour costs O(n^3)."""
    if top > 0 and stack[top - 1] == v:
        return top
    if top < stack.shape[0]:
        stack[top] = v
        return top + 1
    return top


@njit(cache=True, nogil=True)
def _solution_neighbour(y, in_set, indptr, indices):
    for k in range(indptr[y], indptr[y + 1]):
        if in_set[indices[k]]:
            return indices[k]
    return -1


@njit(cache=True, nogil=True)
def _after_removal(r, in_set, tight, indptr, indices, stack, top, log, nlog):
    """Around a removed vertex: insert what became free, queue the owners of 1-tight vertices."""
    added = 0
    for k in range(indptr[r], indptr[r + 1]):
        y = indices[k]
        if in_set[y]:
            continue
        if tight[y] == 0:
            _insert(y, in_set, tight, indptr, indices)
            log[nlog] = y + 1
            nlog += 1
            added += 1
            top = _push(stack, top, y)
        elif tight[y] == 1:
            top = _push(stack, top, _solution_neighbour(y, in_set, indptr, indices))
    return top, nlog, added


@njit(cache=True, nogil=True)
# complexity: a numba kernel: kept whole so it compiles to one loop
def local_search(indptr, indices, in_set, tight, stack, top, mark, stamp, log, nlog, buf):  # noqa: C901
    """(1,2)-swaps from the queued set vertices until none applies.

    Returns (set size change, log length, stamp). ``log`` records every change (+v+1 inserted,
    -(v+1) removed) so that a rejected step can be undone.
    """
    gained = 0
    while top > 0:
        top -= 1
        x = stack[top]
        if x < 0 or not in_set[x]:
            continue
        m = 0
        for k in range(indptr[x], indptr[x + 1]):
            u = indices[k]
            if not in_set[u] and tight[u] == 1:
                buf[m] = u
                m += 1
        if m < 2:
            continue
        pick_u = -1
        pick_w = -1
        for i in range(m - 1):
            u = buf[i]
            stamp += 1
            for k in range(indptr[u], indptr[u + 1]):
                mark[indices[k]] = stamp
            for j in range(i + 1, m):
                if mark[buf[j]] != stamp:
                    pick_u = u
                    pick_w = buf[j]
                    break
            if pick_u >= 0:
                break
        if pick_u < 0:
            continue
        _remove(x, in_set, tight, indptr, indices)
        log[nlog] = -(x + 1)
        nlog += 1
        for v in (pick_u, pick_w):
            _insert(v, in_set, tight, indptr, indices)
            log[nlog] = v + 1
            nlog += 1
            top = _push(stack, top, v)
        gained += 1
        top, nlog, added = _after_removal(x, in_set, tight, indptr, indices, stack, top, log, nlog)
        gained += added
    return gained, nlog, stamp


@njit(cache=True, nogil=True)
def _undo(log, nlog, in_set, tight, indptr, indices):
    for i in range(nlog - 1, -1, -1):
        e = log[i]
        if e > 0:
            _remove(e - 1, in_set, tight, indptr, indices)
        else:
            _insert(-e - 1, in_set, tight, indptr, indices)


@njit(cache=True, nogil=True)
def initial_local_search(indptr, indices, in_set, tight, stack, mark, log, buf):
    """Local search from every set vertex (after the greedy start); returns the gain."""
    top = 0
    for v in range(in_set.shape[0]):
        if in_set[v]:
            stack[top] = v
            top += 1
    gained, _nlog, _stamp = local_search(
        indptr, indices, in_set, tight, stack, top, mark, 0, log, 0, buf
    )
    return gained


@njit(cache=True, nogil=True)
# complexity: a numba kernel: kept whole so it compiles to one loop
def iterate(indptr, indices, in_set, tight, size, best, best_size, iterations, stack, mark,  # noqa: C901
            log, buf, stamp):
    """``iterations`` ILS steps: perturb (force 1, sometimes more, outside vertices in and their
    set neighbours out), local search, keep the step unless the set shrank. Returns
    (size, best size, stamp); ``best`` holds the best set seen."""
    n = in_set.shape[0]
    for _ in range(iterations):
        nlog = 0
        top = 0
        delta = 0
        k = 1
        while np.random.random() < 0.5 and k < 4:
            k += 1
        for _f in range(k):
            # Of two random outside vertices, force in the one with fewer set neighbours.
            v = np.random.randint(n)
            w = np.random.randint(n)
            if in_set[v] or (not in_set[w] and tight[w] < tight[v]):
                v = w
            if in_set[v]:
                continue
            for kk in range(indptr[v], indptr[v + 1]):
                r = indices[kk]
                if in_set[r]:
                    _remove(r, in_set, tight, indptr, indices)
                    log[nlog] = -(r + 1)
                    nlog += 1
                    delta -= 1
            _insert(v, in_set, tight, indptr, indices)
            log[nlog] = v + 1
            nlog += 1
            delta += 1
            top = _push(stack, top, v)
        for i in range(nlog):
            if log[i] < 0:
                top, nlog, added = _after_removal(
                    -log[i] - 1, in_set, tight, indptr, indices, stack, top, log, nlog
                )
                delta += added
        gained, nlog, stamp = local_search(
            indptr, indices, in_set, tight, stack, top, mark, stamp, log, nlog, buf
        )
        delta += gained
        if delta < 0:
            _undo(log, nlog, in_set, tight, indptr, indices)
            continue
        size += delta
        if size > best_size:
            best_size = size
            best[:] = in_set
    return size, best_size, stamp


@njit(cache=True, nogil=True)
def qubo_cost(indptr, indices, weights, diag, x):
    """x^T Q x in int64 from the symmetric CSR couplings (each pair counted once)."""
    total = np.int64(0)
    for v in range(x.shape[0]):
        if x[v]:
            total += diag[v]
            for k in range(indptr[v], indptr[v + 1]):
                u = indices[k]
                if u > v and x[u]:
                    total += weights[k]
    return total
