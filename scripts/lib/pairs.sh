# Sourced by the bench scripts (not run): pairs N A B runs A and B (function
# or command names, each appending its figure to its own file) N times each,
# interleaved, A first in odd pairs and B first in even ones, so the
# machine's drift and the cache each leaves behind fall on both sides.
pairs() {
  local n=$1 a=$2 b=$3 i
  for ((i = 1; i <= n; i++)); do
    if ((i % 2)); then "$a"; "$b"; else "$b"; "$a"; fi
  done
}
