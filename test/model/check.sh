#!/usr/bin/env bash
# Model-checks test/model/lease.pml with SPIN (Debian package `spin`): the protocol is safe while the
# clock skew stays within the recovery margin, unsafe beyond it, and the seeded bug is caught.
set -euo pipefail
command -v spin >/dev/null || { echo "spin is not installed: apt-get install spin" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/lease.pml" "$work/"
cd "$work"

failed=0
run() { # expectation, label, spin defines...
  local expect=$1 label=$2; shift 2
  spin -a "$@" lease.pml >/dev/null
  gcc -O2 -DSAFETY -o pan pan.c 2>/dev/null
  local out errors states
  out=$(./pan -m100000 2>&1)
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -1)
  local verdict=safe; [ "$errors" != 0 ] && verdict=violated
  local ok=yes; [ "$verdict" != "$expect" ] && ok=NO && failed=$((failed + 1))
  printf '%-52s %-9s (expected %-8s) %s states  %s\n' "$label" "$verdict" "$expect" "$states" "$([ $ok = yes ] && echo ok || echo UNEXPECTED)"
}

run safe     'skew 0, margin 1'                 -DDELTA=0 -DMARGIN=1
run safe     'skew 1 within margin 1'           -DDELTA=1 -DMARGIN=1
run safe     'skew 2 within margin 2'           -DDELTA=2 -DMARGIN=2
run violated 'skew 3 beyond margin 1'           -DDELTA=3 -DMARGIN=1
run violated 'skew 2 beyond margin 0'           -DDELTA=2 -DMARGIN=0
run violated 'seeded bug: complete without the token' -DDELTA=0 -DMARGIN=1 -DBUG
echo "model: $((6 - failed)) passed, $failed failed"
[ "$failed" = 0 ]
