# Builds the `moments` binary and runs it on a slim Debian (the last stage,
# what `docker compose up` builds). The `test` stage is where
# `docker compose --profile test run --rm tests` runs scripts/test.sh.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin moments

# Everything scripts/test.sh needs that the Rust image lacks: Go (FerretDB
# is built from the Go module proxy and needs Go 1.24+, newer than
# Debian's), Node.js (the browser tests; Debian's is older than the README's
# floor), and from apt what the script would otherwise install on its first
# run. The sources are mounted at /src by docker-compose.yml.
FROM rust:1-bookworm AS test
COPY --from=golang:1-bookworm /usr/local/go /usr/local/go
COPY --from=node:22-bookworm /usr/local/bin/node /usr/local/bin/node
COPY --from=node:22-bookworm /usr/local/lib/node_modules /usr/local/lib/node_modules
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
ENV PATH=/usr/local/go/bin:$PATH
RUN apt-get update && apt-get install -y --no-install-recommends \
      python3-venv redis-server chromium fonts-wqy-microhei fonts-noto-color-emoji \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/moments /usr/local/bin/moments
ENV MOMENTS_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["moments"]
CMD ["serve"]
