//! A TCP proxy that can be cut: while cut, it has dropped its connections
//! and its port refuses new ones, so what connects through it sees its
//! store down while everything else reaches that store.

pub struct Proxy {
    addr: std::net::SocketAddr,
    upstream: String,
    running: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    links: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    /// A proxy to `upstream` (`HOST:PORT`) on a free loopback port.
    pub async fn start(upstream: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Self {
            addr: listener.local_addr().unwrap(),
            upstream: upstream.to_string(),
            running: std::sync::Mutex::new(None),
            links: std::sync::Arc::default(),
        };
        proxy.serve(listener);
        proxy
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    fn serve(&self, listener: tokio::net::TcpListener) {
        let (upstream, links) = (self.upstream.clone(), self.links.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                links.lock().unwrap().push(tokio::spawn(async move {
                    if let Ok(mut out) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                    }
                }));
            }
        });
        *self.running.lock().unwrap() = Some(task);
    }

    pub fn cut(&self) {
        if let Some(task) = self.running.lock().unwrap().take() {
            task.abort();
        }
        for link in self.links.lock().unwrap().drain(..) {
            link.abort();
        }
    }

    pub async fn mend(&self) {
        let listener = tokio::net::TcpListener::bind(self.addr).await.unwrap();
        self.serve(listener);
    }
}
