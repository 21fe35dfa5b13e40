package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWorkerRejoinWithAnotherKey: a worker process killed and replaced at
// its address by one holding another ticket key never joins planning (no
// plan names it, system.runtime.workers shows it refused, reads and
// writes keep succeeding on the other worker), and a process with the
// cluster's key at that address rejoins.
func TestWorkerRejoinWithAnotherKey(t *testing.T) {
	dir, w1, w2, c, cnxn := listedWorkersIn(t, 4000)
	bin := icefloeBin(t)
	env := []string{membershipKey}
	const scan = `SELECT * FROM t`
	loc := w2.field("worker")
	addr := strings.TrimPrefix(loc, "grpc://")

	w2.cmd.Process.Kill()
	w2.waitExit(30 * time.Second)
	waitPlanned(t, c.addr(), scan, 10*time.Second, w1.field("worker"))

	bad := startProc(t, bin, []string{"ICEFLOE_TICKET_KEY=another key"}, "worker", "--listen", addr, "--data-dir", dir)

	if bad.field("worker") != loc {
		t.Fatalf("the replacement listens at %s, want %s", bad.field("worker"), loc)
	}
	c.waitLog(30*time.Second, "refused worker", "ticket key differs", loc)
	execUpdate(t, cnxn, `CREATE TABLE rejoin_writes (n BIGINT)`)
	writes := 0
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		got, err := planned(t, c.addr(), scan)
		if err != nil {
			t.Fatal(err)
		}
		if got[loc] {
			t.Fatalf("a scan was planned on the worker with another key: %v", got)
		}
		// Written by a worker's fragment: one planned on the worker with
		// another key fails, its ticket not valid there.
		execUpdate(t, cnxn, fmt.Sprintf(`INSERT INTO rejoin_writes SELECT id FROM t WHERE id = %d`, writes))
		writes++
		res := mustQuery(t, cnxn, fmt.Sprintf(`SELECT health FROM system.runtime.workers WHERE address = '%s'`, loc))
		if len(res.rows) != 1 || res.rows[0] != "refused" {
			t.Fatalf("system.runtime.workers shows the worker with another key as %v, want refused", res.rows)
		}
	}
	wantRows(t, cnxn, `SELECT count(*), sum(id) FROM t`, "4000 | 7998000")
	wantRows(t, cnxn, `SELECT count(*) FROM rejoin_writes`, fmt.Sprint(writes))

	bad.cmd.Process.Kill()
	bad.waitExit(30 * time.Second)
	good := startProc(t, bin, env, "worker", "--listen", addr, "--data-dir", dir)
	waitPlanned(t, c.addr(), scan, 20*time.Second, w1.field("worker"), good.field("worker"))
	wantRows(t, cnxn, `SELECT health FROM system.runtime.workers WHERE address = '`+loc+`'`, "live")
	wantRows(t, cnxn, `SELECT count(*), sum(id) FROM t`, "4000 | 7998000")
}
