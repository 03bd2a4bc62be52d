# Builds the `moments` binary and runs it on a slim Debian.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin moments

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/moments /usr/local/bin/moments
ENV MOMENTS_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["moments"]
CMD ["serve"]
