// Command icefloe is the one binary: serve (standalone), coordinator,
// worker, and the sql client.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/icefloe/icefloe/catalog"
)

const usage = `usage: icefloe <command> [flags]

commands:
  serve        coordinator and workers in one process, embedded catalog
  coordinator  the Flight SQL coordinator alone (workers from --worker)
  worker       one Flight worker
  sql          run SQL against a coordinator and print the result
  config       config check FILE: print the effective config, secrets redacted
  passwd       print the bcrypt hash of a password for auth.users
  token        issue a bearer token for a configured user

Run 'icefloe <command> -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "icefloe:", catalog.ScrubText(err.Error()))
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "coordinator":
		return runCoordinator(ctx, args[1:], stderr)
	case "worker":
		return runWorker(ctx, args[1:], stderr)
	case "sql":
		return runSQL(ctx, args[1:], stdin, stdout, stderr)
	case "config":
		return runConfig(args[1:], stdout)
	case "passwd":
		return runPasswd(args[1:], stdin, stdout, stderr)
	case "token":
		return runToken(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
