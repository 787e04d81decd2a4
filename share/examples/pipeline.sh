#!/bin/sh
# A word count as a 4-rank shell pipeline under worldrun:
#
#     worldrun -n 4 share/examples/pipeline.sh [FILE]
#
# Each rank counts the words on its share of FILE's lines (line i goes to
# rank i mod N) and publishes the count; rank 0 adds the counts up once
# every rank has published, and publishes the total; then every rank
# reports its share of it. FILE defaults to this script.
set -eu

file=${1:-$0}
rank=$(worldctl rank)
size=$(worldctl size)

words=$(awk -v r="$rank" -v n="$size" \
	'(NR - 1) % n == r { w += NF } END { print w + 0 }' "$file")
worldctl kv set "words.$rank" "$words"

# Past this barrier, every rank's count is in the registry.
worldctl barrier counted
if [ "$rank" -eq 0 ]; then
	total=0 r=0
	while [ "$r" -lt "$size" ]; do
		n=$(worldctl kv get "words.$r")
		total=$((total + n)) r=$((r + 1))
	done
	worldctl kv set total "$total"
	echo "total: $total words in $file"
fi

# Past this one, the total is.
worldctl barrier summed
echo "rank $rank: $words of $(worldctl kv get total) words"
