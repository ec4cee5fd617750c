#!/usr/bin/env bash
# Checks what importing slotted costs a user: a program that imports only the
# root package and its diagnose subpackage must get gorm's modules in its
# go.sum and nothing else (no drivers, no test libraries). It builds two throwaway modules, one importing
# gorm alone and one importing slotted (through a replace to this checkout),
# tidies both, and compares the module sets of their go.sum files.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

mkdir -p "$work/gormonly" "$work/user"
gorm_version=$(cd "$repo" && GOWORK=off go list -m -f '{{.Version}}' gorm.io/gorm)

cat >"$work/gormonly/main.go" <<'GO'
package main

import "gorm.io/gorm"

func main() { _ = gorm.Config{} }
GO
(cd "$work/gormonly" && go mod init example.com/gormonly >/dev/null 2>&1 &&
	go get "gorm.io/gorm@$gorm_version" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1)

cat >"$work/user/main.go" <<'GO'
package main

import (
	"github.com/slotted-go/slotted"
	"github.com/slotted-go/slotted/diagnose"
)

func main() { _, _ = slotted.New(slotted.Config{}), diagnose.Options{} }
GO
(cd "$work/user" && go mod init example.com/user >/dev/null 2>&1 &&
	go mod edit -require=github.com/slotted-go/slotted@v0.0.0 -replace=github.com/slotted-go/slotted="$repo" &&
	go mod tidy >/dev/null)

modules() { awk '{print $1}' "$1" | sort -u; }
extra=$(comm -13 <(modules "$work/gormonly/go.sum") <(modules "$work/user/go.sum"))
echo "go.sum of a program importing only gorm.io/gorm:  $(modules "$work/gormonly/go.sum" | wc -l) modules"
echo "go.sum of a program importing only slotted:       $(modules "$work/user/go.sum" | wc -l) modules"
if [ -n "$extra" ]; then
	echo "importing slotted adds modules beyond gorm's:" >&2
	echo "$extra" >&2
	exit 1
fi
echo "ok: importing slotted adds nothing to go.sum beyond gorm's own modules"
