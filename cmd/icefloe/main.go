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
  version      print the version (also --version)

Run 'icefloe <command> -h' for a command's flags.
`

func main() {
	// `icefloe sql` handles Ctrl-C itself: it cancels the running
	// statement, not the process.
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if len(os.Args) > 1 && os.Args[1] == "sql" {
		sigs = sigs[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err (if any) as one line and returns the exit code: 0
// for none or -h, an exitError's own code, else 1.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "icefloe:", catalog.ScrubText(err.Error()))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "serve":
		return startupError(runServe(ctx, args[1:], stderr))
	case "coordinator":
		return startupError(runCoordinator(ctx, args[1:], stderr))
	case "worker":
		return startupError(runWorker(ctx, args[1:], stderr))
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
	case "-version", "--version", "version":
		fmt.Fprint(stdout, versionText())
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
