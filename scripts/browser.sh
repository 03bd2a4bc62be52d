#!/usr/bin/env bash
# Runs the web client's tests in a real browser: type-checks the pages'
# modules (tsc over their JSDoc), starts the real binary on a free port and
# has Playwright drive Debian's chromium, headless, through the scenarios in
# tests/browser. Screenshots at phone width land in target/screenshots/,
# or, with MOMENTS_UPDATE_SCREENSHOTS=1, in docs/screenshots/ (the README's).
#   scripts/browser.sh embedded   the embedded default (a fresh data dir)
#   scripts/browser.sh stores     MongoDB (wire) + Redis, as test.sh starts
#                                 them (MOMENTS_TEST_MONGODB_URI/REDIS_URL)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stores.sh
backend=${1:-embedded}
need_browser
(cd tests/browser && node_modules/.bin/tsc --noEmit -p tsconfig.json)
start_moments browser "$backend"

echo "== browser tests on $backend" >&2
# Screenshots come from one backend only: the pages are the same on all.
shots=
if [ "$backend" = embedded ]; then
  shots="$PWD/target/screenshots"
  if [ "${MOMENTS_UPDATE_SCREENSHOTS:-}" = 1 ]; then shots="$PWD/docs/screenshots"; fi
fi
# A phone photo: 640 × 480 with Orientation 6 and a GPS position in its EXIF.
cargo run --locked --quiet --example sample_photo -- "$MOMENTS_RUN_DIR/phone.jpg" 640 480 6
(cd tests/browser && MOMENTS_SAMPLE_PHOTO="$MOMENTS_RUN_DIR/phone.jpg" MOMENTS_BASE_URL="$BASE" MOMENTS_ADMIN_USERNAME="$ADMIN_USERNAME" \
  MOMENTS_ADMIN_PASSWORD="$ADMIN_PASSWORD" MOMENTS_SCREENSHOTS_DIR="$shots" \
  node --test --test-concurrency=1 ./*.test.mjs)
SUITE_PASSED=1
