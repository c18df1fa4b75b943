#!/usr/bin/env bash
# The runtime tree of the service image: the production dependencies, the built server and the files
# it reads at run time, laid out as in the repository (the server finds docs/site and
# @svc/contract/openapi.json from packages/server/dist). The Dockerfile builds its runtime stage with
# this script, and tools/image/test/runtime-tree.test.ts runs the same script outside a container.
#
# Usage:
#   runtime-tree.sh manifests <source> <target>         what the production install reads: the lockfile,
#                                                       pnpm-workspace.yaml, patches/ and the package.json
#                                                       of the root and of every workspace package
#   runtime-tree.sh install <target> [pnpm flags...]    the production dependencies, from the lockfile
#                                                       (better-sqlite3 compiles here: python3, make, g++)
#   runtime-tree.sh output <source> <target>            the build output (`pnpm build` has run in <source>)
#   runtime-tree.sh check <target>                      fails when a file the server reads is missing or
#                                                       a development tool was installed
#   runtime-tree.sh all <source> <target> [pnpm flags...]   the four steps in order
set -euo pipefail

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

fail() {
  echo "runtime-tree: $*" >&2
  exit 1
}

# The workspace projects, as the lockfile names them (`.`, `packages/server`, ...): a frozen install
# needs the package.json of each.
importers() {
  awk '/^importers:/ { inside = 1; next }
       inside && /^[^ ]/ { exit }
       inside && /^  [^ ]/ { sub(/^  /, ""); sub(/:.*$/, ""); gsub(/\047/, ""); print }' "$1/pnpm-lock.yaml"
}

manifests() {
  local source=$1 target=$2 project
  [ -f "$source/pnpm-lock.yaml" ] || fail "$source/pnpm-lock.yaml not found"
  mkdir -p "$target"
  cp "$source/pnpm-lock.yaml" "$source/pnpm-workspace.yaml" "$target/"
  [ ! -f "$source/.npmrc" ] || cp "$source/.npmrc" "$target/"
  [ ! -d "$source/patches" ] || cp -R "$source/patches" "$target/"
  while read -r project; do
    [ -f "$source/$project/package.json" ] || fail "$source/$project/package.json not found (a project in pnpm-lock.yaml)"
    mkdir -p "$target/$project"
    cp "$source/$project/package.json" "$target/$project/package.json"
  done < <(importers "$source")
}

install() {
  local target=$1
  shift
  (cd "$target" && npx -y pnpm@10 install --prod --frozen-lockfile "$@")
}

output() {
  local source=$1 target=$2 file
  for file in packages/server/dist/main.js packages/server/dist/svc.js docs/site/index.html packages/contract/openapi.json; do
    [ -f "$source/$file" ] || fail "$source/$file not found: run \`npx -y pnpm@10 build\` first"
  done
  mkdir -p "$target/packages/server" "$target/packages/contract" "$target/docs"
  rm -rf "$target/packages/server/dist" "$target/docs/site"
  cp -R "$source/packages/server/dist" "$target/packages/server/dist"
  cp -R "$source/docs/site" "$target/docs/site"
  cp "$source/packages/contract/openapi.json" "$target/packages/contract/openapi.json"
}

# Development tools that must never reach the runtime tree (a `--prod` install leaves them out).
DEV_TOOLS=(tsx typescript jest ts-jest tsup @biomejs/biome)

check() {
  local target=$1 file tool found
  for file in packages/server/dist/main.js packages/server/dist/svc.js docs/site/index.html packages/contract/openapi.json \
    packages/contract/package.json packages/server/node_modules/@svc/contract/package.json; do
    [ -f "$target/$file" ] || fail "$target/$file is missing"
  done
  [ -d "$target/node_modules/.pnpm" ] || fail "$target/node_modules/.pnpm is missing: run the install step"
  for tool in "${DEV_TOOLS[@]}"; do
    found=$(find "$target/node_modules/.pnpm" -maxdepth 1 -name "${tool/\//+}@*" -print -quit)
    [ -z "$found" ] || fail "a development tool was installed: $found"
  done
}

[ $# -ge 2 ] || usage
step=$1
shift
case "$step" in
  manifests) [ $# -eq 2 ] || usage; manifests "$1" "$2" ;;
  install) install "$@" ;;
  output) [ $# -eq 2 ] || usage; output "$1" "$2" ;;
  check) [ $# -eq 1 ] || usage; check "$1" ;;
  all)
    [ $# -ge 2 ] || usage
    source=$1 target=$2
    shift 2
    manifests "$source" "$target"
    install "$target" "$@"
    output "$source" "$target"
    check "$target"
    ;;
  *) usage ;;
esac
