package integration

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/icefloe/icefloe/cluster"
	"github.com/icefloe/icefloe/internal/metrics"
)

// ensureChromium returns Debian's chromium, installing it with apt-get
// when it is missing.
func ensureChromium(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "chromium"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// statusListener serves c's status page on an HTTP listener of
// 127.0.0.1, closed when t ends, and returns its address.
func statusListener(t testing.TB, c *cluster.Coordinator) string {
	t.Helper()
	page, err := c.StatusPage()
	if err != nil {
		t.Fatal(err)
	}
	web, err := metrics.Listen(metrics.ServerOptions{Addr: "127.0.0.1:0", Gatherer: prometheus.NewRegistry(), Status: page})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Close() })
	return web.Addr()
}

// The status page in headless Chromium: it shows a running query of
// another principal to an admin, lists it in the DOM, and its cancel
// button ends it (the client's read fails with Cancelled). It is behind
// the Flight service's authentication, shows a principal only its own
// queries, and refuses a cancel that did not come from the page.
func TestStatusPageInChromium(t *testing.T) {
	browser := ensureChromium(t)
	e := startSecure(t)
	addr := statusListener(t, e.s.Coordinator)
	base := "http://" + addr + "/"

	bob, root := e.login(t, "bob"), e.login(t, "root")
	id, done := runSlow(t, bob, root)

	get := func(user string) (int, string) {
		req, _ := http.NewRequest("GET", base, nil)
		if user != "" {
			req.SetBasicAuth(user, securePasswords[user])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d, want 401", code)
	}
	if code, body := get("alice"); code != http.StatusOK || strings.Contains(body, id) || strings.Contains(body, `id="workers"`) {
		t.Fatalf("alice's page (%d) shows bob's query or the workers:\n%s", code, body)
	}
	form := url.Values{"query_id": {id}, "token": {"forged"}}
	req, _ := http.NewRequest("POST", base+"cancel", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+addr)
	req.SetBasicAuth("root", securePasswords["root"])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cancel without the page's token: %v %v, want 403", resp.Status, err)
	}

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Flag("headless", true), chromedp.WindowSize(1280, 800))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	auth := basic("root", securePasswords["root"])
	running := fmt.Sprintf(`tr.running[data-query="%s"]`, id)
	var shot []byte
	var table string
	if err := chromedp.Run(ctx,
		network.Enable(),
		network.SetExtraHTTPHeaders(network.Headers{"Authorization": auth}),
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(base),
		chromedp.WaitVisible(running, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&shot),
		chromedp.OuterHTML("#queries", &table, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("open the status page: %v", err)
	}
	file := filepath.Join(t.TempDir(), "status.png")
	if err := os.WriteFile(file, shot, 0o600); err != nil {
		t.Fatal(err)
	}
	img, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil || img.Width != 1280 || img.Height != 800 {
		t.Fatalf("screenshot %s: %+v %v, want a 1280x800 PNG", file, img, err)
	}
	// Nothing of it was read yet: 0 of its endpoints done.
	for _, want := range []string{id, "bob", "running", "orders a, orders b", "<td>0/1</td>"} {
		if !strings.Contains(table, want) {
			t.Fatalf("the queries table does not show %q:\n%s", want, table)
		}
	}
	if err := chromedp.Run(ctx,
		chromedp.Click(fmt.Sprintf(`button.cancel[data-query="%s"]`, id), chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`tr.cancelled[data-query="%s"]`, id), chromedp.ByQuery),
	); err != nil {
		t.Fatalf("cancel from the page: %v", err)
	}
	select {
	case err := <-done:
		wantLimit(t, "query cancelled from the page", err, codes.Canceled, "cancelled")
	case <-time.After(30 * time.Second):
		t.Fatal("the query cancelled from the page still runs")
	}
}
