package integration

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// TestWorkerKilledWhilePulling: one of three workers killed (SIGKILL) at
// a random moment while a client pulls a query's endpoints, then started
// again. Each run ends in the full answer (the same rows and values as a
// run without a kill: an endpoint whose stream had not started is read
// at its fallback location, a gather or final whose child died re-pulls
// it elsewhere) or a clear error (a gRPC status naming the failure, e.g.
// UNAVAILABLE) — never fewer, more or different rows without an error.
// Runs cover a scatter scan read by ADBC (all endpoints in parallel) and
// by a slow Flight client reading the endpoints one after the other, a
// two-phase aggregate and a gather (a window). Outcomes are counted.
func TestWorkerKilledWhilePulling(t *testing.T) {
	// Without the result cache: a cacheable one-endpoint query would be
	// read through the coordinator, and the kills are of the workers the
	// client reads from.
	cfg := filepath.Join(t.TempDir(), "icefloe.yaml")
	if err := os.WriteFile(cfg, []byte("result_cache_bytes: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, c, worker := announcedCluster(t, "--config", cfg)
	workers := []*role{worker(), worker(), worker()}
	locs := func() []string {
		var out []string
		for _, w := range workers {
			out = append(out, w.field("worker"))
		}
		return out
	}
	cnxn := adbcConn(t, c.addr())
	// Many files, so rendezvous affinity spreads them over every worker.
	seedTableFiles(t, cnxn, "t", 48000, 2000)
	waitPlanned(t, c.addr(), `SELECT * FROM t`, 10*time.Second, locs()...)

	cl := flightClient(t, c.addr())
	reader := &slowReader{clients: map[string]*flight.Client{}}
	t.Cleanup(reader.close)
	adbcRead := func(q string, _ chan<- string) ([]string, error) {
		res, err := query(t, cnxn, q)
		return res.rows, err
	}
	slowRead := func(q string, planned chan<- string) ([]string, error) { return reader.read(cl, q, planned) }
	// ~19 MB of rows, more than gRPC buffers ahead of a slow reader.
	const scan = `SELECT id, g, repeat(chr(65 + (g % 26)::INT), 400) AS pad FROM t`
	kinds := []struct {
		name string
		q    string
		read func(q string, planned chan<- string) ([]string, error)
		// oneEndpoint: the query has one endpoint (a final or gather) whose
		// worker pulls from the others; odd runs kill its worker, even
		// runs one of its children's.
		oneEndpoint bool
	}{
		{"scan, ADBC", scan, adbcRead, false},
		{"scan, endpoints in order", scan, slowRead, false},
		{"two-phase aggregate", `SELECT g, count(*), sum(id), min(id), max(id) FROM t GROUP BY g`, slowRead, true},
		{"gather (window)", `SELECT id, g, sum(id) OVER (PARTITION BY g ORDER BY id) AS run FROM t`, slowRead, true},
	}
	const runs = 5
	outcome := map[string]map[string]int{}
	for _, k := range kinds {
		start := time.Now()
		rows, err := k.read(k.q, nil)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s without a kill: %v", k.name, err)
		}
		want := digest(rows)
		outcome[k.name] = map[string]int{}
		for run := 1; run <= runs; run++ {
			done := make(chan error, 1)
			planned := make(chan string, 1)
			var got []string
			go func() {
				defer close(planned)
				var err error
				got, err = k.read(k.q, planned)
				done <- err
			}()
			victim, at, who := rand.IntN(len(workers)), took, ""
			if k.oneEndpoint {
				final := run%2 == 1
				victim, at, who = pickVictim(t, workers, <-planned, final), took/3, " (a child's worker killed)"
				if final {
					who = " (its worker killed)"
				}
			}
			time.Sleep(time.Duration(rand.Int64N(int64(at) + 1)))
			workers[victim].cmd.Process.Kill()
			err := <-done
			workers[victim].waitExit(10 * time.Second)
			switch {
			case err == nil && digest(got) == want:
				outcome[k.name]["full answer"+who]++
			case err != nil && clearError(err):
				outcome[k.name]["clear error"+who]++
				if errors.Is(err, errAfterRows) {
					outcome[k.name]["of them after rows had arrived"]++
				}
				t.Logf("%s, run %d: %v", k.name, run, err)
			default:
				outcome[k.name]["wrong"+who]++
				t.Errorf("%s, run %d (wrong): %d rows, want %d; error %v", k.name, run, len(got), want.rows, err)
			}
			workers[victim] = worker()
			waitPlanned(t, c.addr(), `SELECT * FROM t`, 10*time.Second, locs()...)
		}
		if n := reader.fallbacks.Swap(0); n > 0 {
			outcome[k.name]["endpoints read at a fallback location"] = int(n)
		}
		t.Logf("%s (%d rows, %s unkilled): outcomes over %d runs with a worker killed: %v",
			k.name, want.rows, took.Round(time.Millisecond), runs, outcome[k.name])
	}
}

// rowsDigest identifies a result's rows whatever their order.
type rowsDigest struct {
	rows int
	sum  [32]byte
}

func digest(rows []string) rowsDigest {
	sorted := slices.Clone(rows)
	slices.Sort(sorted)
	h := sha256.New()
	for _, r := range sorted {
		h.Write([]byte(r))
		h.Write([]byte{'\n'})
	}
	d := rowsDigest{rows: len(rows)}
	copy(d.sum[:], h.Sum(nil))
	return d
}

// clearError says whether err names the failure: a gRPC status other
// than Unknown, as such or through the ADBC driver.
func clearError(err error) bool {
	var ae adbc.Error
	if errors.As(err, &ae) {
		return ae.Code != adbc.StatusUnknown && ae.Code != adbc.StatusOK
	}
	st, ok := status.FromError(err)
	return ok && st.Code() != codes.Unknown && st.Code() != codes.OK
}

// slowReader reads a query's endpoints one after the other, trying each
// endpoint's locations in order until a DoGet answers (as the ADBC driver
// does), and sleeps a little after each batch, so a stream is still
// running when a worker is killed. Once a stream has begun its failure is
// the read's: no other location is tried.
type slowReader struct {
	mu        sync.Mutex
	clients   map[string]*flight.Client
	fallbacks atomic.Int64
}

// errAfterRows marks a read that failed after rows of the endpoint had
// arrived.
var errAfterRows = errors.New("after rows had arrived")

// pickVictim returns the index of the worker at loc (the one endpoint's
// first location) when final is set, else of another worker.
func pickVictim(t testing.TB, workers []*role, loc string, final bool) int {
	t.Helper()
	var others []int
	for i, w := range workers {
		if w.field("worker") == loc {
			if final {
				return i
			}
			continue
		}
		others = append(others, i)
	}
	if final || len(others) == len(workers) {
		t.Fatalf("the query's one endpoint is at %q, no worker's", loc)
	}
	return others[rand.IntN(len(others))]
}

func (r *slowReader) client(loc string) (flight.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cl, ok := r.clients[loc]; ok {
		return *cl, nil
	}
	cl, err := flight.NewClientWithMiddleware(strings.TrimPrefix(loc, "grpc://"), nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	r.clients[loc] = &cl
	return cl, nil
}

func (r *slowReader) close() {
	for _, cl := range r.clients {
		(*cl).Close()
	}
}

// When planned is set, it is sent the first location of the query's
// endpoint once the query is planned ("" when it has several).
func (r *slowReader) read(cl *flightsql.Client, q string, planned chan<- string) ([]string, error) {
	ctx := context.Background()
	info, err := cl.Execute(ctx, q)
	if err != nil {
		return nil, err
	}
	if planned != nil && len(info.Endpoint) == 1 && len(info.Endpoint[0].Location) > 0 {
		planned <- info.Endpoint[0].Location[0].Uri
	}
	var rows []string
	for i, ep := range info.Endpoint {
		rdr, err := r.open(ctx, ep)
		if err != nil {
			return rows, fmt.Errorf("endpoint %d: %w", i, err)
		}
		n := 0
		for rdr.Next() {
			rec := rdr.RecordBatch()
			n += int(rec.NumRows())
			rows = append(rows, rowsOf(rec)...)
			time.Sleep(10 * time.Millisecond)
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil && n > 0 {
			return rows, fmt.Errorf("endpoint %d: %w %d rows: %w", i, errAfterRows, n, err)
		}
		if err != nil {
			return rows, fmt.Errorf("endpoint %d: %w", i, err)
		}
	}
	return rows, nil
}

// open DoGets ep from its first location that answers with a schema.
func (r *slowReader) open(ctx context.Context, ep *flight.FlightEndpoint) (*flight.Reader, error) {
	var errs []error
	for i, loc := range ep.Location {
		cl, err := r.client(loc.Uri)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stream, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rdr, err := flight.NewRecordReader(stream)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if i > 0 {
			r.fallbacks.Add(1)
		}
		return rdr, nil
	}
	return nil, errors.Join(errs...)
}
