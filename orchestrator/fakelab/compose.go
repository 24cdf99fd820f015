package fakelab

import (
	"path/filepath"
	"testing"
)

// ShopCompose is a user's compose file: an app (built by compose, no
// image: of its own), the official-style PostgreSQL and a cache beside
// them. Its database credentials are user shop, password s3cret (unless
// SHOP_DB_PASSWORD says otherwise) and database shopdb.
const ShopCompose = `services:
  web:
    build: .
    environment:
      DATABASE_URL: postgres://shop:${SHOP_DB_PASSWORD:-s3cret}@pg:5432/shopdb
      WORKERS: "2"
    expose: ["9000"]
    depends_on: [pg, cache]
    volumes:
      - ./config:/etc/shop:ro
  pg:
    image: example/postgres:17
    environment:
      POSTGRES_USER: shop
      POSTGRES_PASSWORD: ${SHOP_DB_PASSWORD:-s3cret}
      POSTGRES_DB: shopdb
    volumes:
      - pgdata:/var/lib/postgresql/data
  cache:
    image: example/cache:7
    tmpfs: [/data]
volumes:
  pgdata: {}
`

// WriteCompose writes body as compose.yaml in a fresh folder named
// Shop_App and returns the file's path: compose names the project after
// the folder, so the image it builds for ShopCompose's web service is
// shop_app-web.
func WriteCompose(t testing.TB, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "Shop_App")
	return WriteFile(t, filepath.Join(dir, "compose.yaml"), body)
}
