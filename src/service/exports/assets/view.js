// The album page's code (index.html): renders window.momentsArchive, which
// album.js sets, with text nodes only; loads nothing.
(function () {
  'use strict';
  var PAGE = 100;
  var archive = window.momentsArchive;
  var list = document.getElementById('posts');
  var more = document.getElementById('more');
  if (!archive) {
    var note = document.createElement('p');
    note.className = 'missing';
    note.textContent = 'album.js is missing: keep index.html in the folder with the archive\'s other files.';
    list.appendChild(note);
    return;
  }
  var profile = archive.profile || {};
  var posts = archive.posts || [];
  document.getElementById('name').textContent =
    (profile.nickName || profile.username || 'My Moments') + (profile.username ? ' (@' + profile.username + ')' : '');
  document.getElementById('summary').textContent =
    posts.length + (posts.length === 1 ? ' post' : ' posts') + ' in this archive';

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function render(p) {
    var a = el('article');
    a.setAttribute('data-post-id', String(p.id));
    var meta = el('div', 'meta', new Date(p.createdAt).toLocaleString());
    if (p.visibility && p.visibility !== 'public') meta.appendChild(el('span', 'tag', p.visibility));
    if (p.moderation) meta.appendChild(el('span', 'tag', p.moderation));
    a.appendChild(meta);
    a.appendChild(el('p', 'text', p.content || ''));
    var media = p.media || [];
    if (media.length) {
      // The originals travel in the archive, beside this page.
      var grid = el('div', 'pictures');
      media.forEach(function (m, i) {
        var link = el('a');
        link.href = m.file;
        var img = el('img');
        img.src = m.file;
        img.alt = m.description || ('Picture ' + (i + 1));
        img.loading = 'lazy';
        link.appendChild(img);
        grid.appendChild(link);
      });
      a.appendChild(grid);
    }
    var pictures = p.pictureUrls || [];
    if (pictures.length) {
      // Links, not images: the album loads nothing by itself.
      var pics = el('div', 'pictures');
      pictures.forEach(function (url, i) {
        var link = el('a', null, 'Picture ' + (i + 1));
        if (/^https?:\/\//i.test(url)) link.href = url;
        link.rel = 'noreferrer noopener';
        link.target = '_blank';
        pics.appendChild(link);
      });
      a.appendChild(pics);
    }
    var where = [];
    if (p.place && p.place.name) where.push(p.place.name);
    if (p.device && p.device.name) where.push(p.device.name);
    if (where.length) a.appendChild(el('div', 'meta', where.join(' · ')));
    a.appendChild(el('div', 'counts',
      '♥ ' + (p.likeCount || 0) + '  💬 ' + (p.commentCount || 0) +
      '  ↗ ' + (p.shareCount || 0) + '  👁 ' + (p.viewCount || 0)));
    return a;
  }

  var shown = [];
  var next = 0;
  function showMore() {
    var end = Math.min(next + PAGE, shown.length);
    var frag = document.createDocumentFragment();
    for (; next < end; next++) frag.appendChild(render(shown[next]));
    list.appendChild(frag);
    more.hidden = next >= shown.length;
  }
  function show(query) {
    var q = (query || '').toLowerCase();
    shown = q ? posts.filter(function (p) { return (p.content || '').toLowerCase().indexOf(q) >= 0; }) : posts;
    next = 0;
    list.textContent = '';
    showMore();
  }
  more.addEventListener('click', showMore);
  document.getElementById('search').addEventListener('input', function (e) { show(e.target.value); });
  show('');
})();
