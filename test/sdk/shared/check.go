// What every SDK program here shares: its deadline, its "ok"/"FAIL" lines and its exit code. Each
// program is its own Go module pinned to its own SDK, so this file is no package of its own:
// buildSdkProgram (test/helpers/go-sdk.ts) adds it to each program's package at build time with
// `go build -overlay`.
package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

var failed bool

// check prints "ok <op>", or "FAIL <op>: <err>" and marks the run as failed.
func check(op string, err error) {
	if err != nil {
		failed = true
		fmt.Printf("FAIL %s: %v\n", op, err)
		return
	}
	fmt.Printf("ok %s\n", op)
}

// deadline is the context every program's calls run in: 90 seconds, well inside the test's timeout.
func deadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 90*time.Second)
}

// exitIfFailed ends the program with status 1 when a check failed.
func exitIfFailed() {
	if failed {
		os.Exit(1)
	}
}
