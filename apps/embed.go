package apps

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// embedded holds every app folder (build contexts and metadata) so rttlab
// builds images outside a checkout.
//
//go:embed README.md all:*/*
var embedded embed.FS

// FS returns the apps tree to build from: the checkout's apps/ folder when
// srcDir (the module root) is given and has one, so a folder added with
// `rttlab apps new` is seen without rebuilding rttlab; else the embedded
// tree.
func FS(srcDir string) fs.FS {
	if srcDir != "" {
		dir := filepath.Join(srcDir, "apps")
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return os.DirFS(dir)
		}
	}
	return embedded
}
