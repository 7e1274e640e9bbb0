package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"napilab/internal/procgroup"
	"napilab/results"
)

// reportChromium returns the headless browser on PATH, or "".
func reportChromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// reportScreenshot renders page with headless chromium into a PNG of w x h
// and returns its bytes. The browser runs in its own process group, killed
// whole on timeout.
func reportScreenshot(t *testing.T, bin, page string, w, h int) []byte {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot,
		"--window-size="+strconv.Itoa(w)+","+strconv.Itoa(h), "file://"+page)
	procgroup.Set(cmd, procgroup.KillOnCancel(5*time.Second))
	out, err := cmd.CombinedOutput()
	b, readErr := os.ReadFile(shot)
	if err != nil || readErr != nil {
		t.Fatalf("chromium: %v; %v\n%s", err, readErr, out)
	}
	return b
}

// reportShot writes r's page, renders it in headless chromium at w x h and
// checks the picture: a PNG of the window's size with many colours. It skips
// the test without chromium.
func reportShot(t *testing.T, r *results.Result, samples []results.SampleLine, w, h int) (image.Image, []byte) {
	t.Helper()
	bin := reportChromium()
	if bin == "" {
		t.Skip("chromium is not on PATH: skipping the screenshot test (make test installs it; apt-get install chromium)")
	}
	page := filepath.Join(t.TempDir(), HTMLFile)
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, r, samples); err != nil {
		t.Fatal(err)
	}
	f.Close()
	shot := reportScreenshot(t, bin, page, w, h)
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	colours := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if len(colours) < 16 {
		t.Errorf("screenshot has %d colours: blank?", len(colours))
	}
	return img, shot
}

// reportColour tells whether img shows the colour "#rrggbb" in the rows
// y0 to y1, give or take colour management.
func reportColour(img image.Image, hex string, y0, y1 int) bool {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	want := [3]uint32{uint32(v >> 16), uint32(v>>8) & 0xff, uint32(v) & 0xff}
	b := img.Bounds()
	for y := max(y0, b.Min.Y); y < min(y1, b.Max.Y); y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, want[0]) && near(g>>8, want[1]) && near(bl>>8, want[2]) {
				return true
			}
		}
	}
	return false
}

// reportKeep writes a screenshot into testdata/report with -update.
func reportKeep(t *testing.T, name string, shot []byte) {
	if *update {
		if err := os.WriteFile(filepath.Join("testdata", "report", name), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHTMLScreenshot renders a real run's page in headless chromium and
// checks the picture for the verdict's green. -update keeps it as
// testdata/report/screenshot.png.
func TestHTMLScreenshot(t *testing.T) {
	r, samples := reportFixture(t, "load")
	img, shot := reportShot(t, r, samples, 1200, 1600)
	if !reportColour(img, "#2e7d32", 0, 200) { // the PASS badge
		t.Errorf("no PASS green in the screenshot")
	}
	reportKeep(t, "screenshot.png", shot)
}

// TestHTMLPollsScreenshot renders the synthetic threaded flip of pollsRun
// and checks that its "who polled" plots show softirq and kthread below the
// timeline. -update keeps it as testdata/report/polls-report.png.
func TestHTMLPollsScreenshot(t *testing.T) {
	r, _ := pollsRun()
	img, shot := reportShot(t, r, nil, 1200, 1800)
	for _, ctx := range []string{"softirq", "ksoftirqd", "kthread", "busypoll"} {
		if !reportColour(img, pollColors[ctx], 800, 1800) {
			t.Errorf("no %s colour %s under the timeline", ctx, pollColors[ctx])
		}
	}
	reportKeep(t, "polls-report.png", shot)
}

func near(a, b uint32) bool { return a+12 >= b && b+12 >= a }
