#!/bin/sh
# Regenerates the sparse-file kernel archives (GNU tar 1.34): each holds a
# manifest listing bzImage at its expanded size (256 MiB: "MZ" and a hole),
# config and build.json, with bzImage stored sparse (a few KiB). The manifest
# says "napilab-kernels-1"; the test puts the current format in its place.
set -eu
out=$(pwd)
key=$(printf sparse | sha256sum | cut -c1-64)
dir=sparse-$(echo "$key" | cut -c1-16)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cd "$stage"
mkdir "$dir"
printf MZ >"$dir/bzImage"
truncate -s 256M "$dir/bzImage"
printf 'CONFIG_A=y\n' >"$dir/config"
sum() { sha256sum "$1" | cut -c1-64; }
size() { stat -c %s "$1"; }
printf '{"spec":"sparse","key":"%s","bzimage_size":%s,"bzimage_sha256":"%s","files":{"bzImage":{"size":%s,"sha256":"%s"},"config":{"size":%s,"sha256":"%s"}}}\n' \
	"$key" "$(size $dir/bzImage)" "$(sum $dir/bzImage)" "$(size $dir/bzImage)" "$(sum $dir/bzImage)" \
	"$(size $dir/config)" "$(sum $dir/config)" >"$dir/build.json"
file() { printf '{"name":"%s","size":%s,"sha256":"%s"}' "$1" "$(size $dir/$1)" "$(sum $dir/$1)"; }
printf '{"format":"napilab-kernels-1","kernels":[{"dir":"%s","spec":"sparse","key":"%s","input_hash":"%s","files":[%s,%s,%s]}]}\n' \
	"$dir" "$key" "$key" "$(file build.json)" "$(file config)" "$(file bzImage)" >napilab-kernels.json
for v in 0.0 0.1 1.0; do
	tar --format=pax --sparse --sparse-version=$v --pax-option=delete=atime,delete=ctime --owner=0 --group=0 --mtime=@0 \
		-cf "$out/pax-$v.tar" napilab-kernels.json "$dir/build.json" "$dir/config" "$dir/bzImage"
done
tar --format=gnu --sparse --owner=0 --group=0 --mtime=@0 \
	-cf "$out/gnu.tar" napilab-kernels.json "$dir/build.json" "$dir/config" "$dir/bzImage"
