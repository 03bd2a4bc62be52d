// @ts-check
// Writing a post: text with emoji, up to nine photos from the phone
// (each uploaded at once, with its progress, alt text, and a way to remove
// or retry it) or picture URLs, shown as the grid readers will see, the
// device model, an optional place, and who may see it.

import { ApiError, call, idempotentCreates, uploadPicture } from '../api.js';
import { fill, h, mediaUrl } from '../dom.js';
import { busy, field, formAlert, onSubmit } from '../forms.js';
import { t } from '../i18n.js';

const MAX_PICTURES = 9;
const EMOJI = ['😀', '😂', '😍', '🥰', '😎', '😭', '👍', '🙏', '🎉', '❤️', '🌸', '☕', '🍜', '🏖️', '🐱', '✨'];
const VISIBILITIES = /** @type {const} */ (['public', 'followers', 'friends', 'private']);
const SAMPLES = ['lake', 'hills', 'city'];
const DEVICE_KEY = 'moments.device';

/** @typedef {import('../types.js').MediaView} MediaView */

/** @param {import('../main.js').PageContext} ctx */
export function render({ main, title }) {
  title(t('compose.title'));
  const content = field({ label: t('compose.content'), name: 'content', rows: 5, placeholder: t('compose.contentPlaceholder') });
  content.wrap.querySelector('label')?.classList.add('visually-hidden');

  const emoji = h(
    'div',
    { class: 'emoji-row', role: 'group', 'aria-label': t('compose.emoji') },
    EMOJI.map((e) => h('button', { type: 'button', class: 'emoji', 'aria-label': `${t('compose.emoji')} ${e}`, onclick: () => insert(e) }, e)),
  );

  /** Puts the emoji where the caret is, and the caret after it. @param {string} text */
  function insert(text) {
    const input = /** @type {HTMLTextAreaElement} */ (content.input);
    const start = input.selectionStart ?? input.value.length;
    const end = input.selectionEnd ?? start;
    input.setRangeText(text, start, end, 'end');
    input.focus();
  }

  /** @type {HTMLInputElement[]} */
  const pictureInputs = [];
  const pictureFields = h('div', { class: 'picture-fields' });
  const preview = h('div', { class: 'pictures compose-preview', 'aria-label': t('compose.preview'), role: 'group' });
  const addPicture = h('button', { type: 'button', class: 'button-quiet small', onclick: () => addPictureField('', true) }, `＋ ${t('compose.addPicture')}`);
  const samples = h('button', { type: 'button', class: 'button-quiet small', onclick: useSamples }, t('compose.samples'));

  /** @param {string} value @param {boolean} focus */
  function addPictureField(value, focus) {
    if (pictureInputs.length >= MAX_PICTURES) return;
    const n = pictureInputs.length;
    const { wrap, input } = field({
      label: t('compose.pictureUrl', { n: n + 1 }), name: `pictureUrls[${n}]`, type: 'url', inputmode: 'url', value,
    });
    const remove = h('button', {
      type: 'button', class: 'link-button danger', 'aria-label': t('compose.removePicture', { n: n + 1 }),
      onclick: () => removePicture(/** @type {HTMLInputElement} */ (input)),
    }, '✕');
    wrap.classList.add('picture-field');
    wrap.append(remove);
    input.addEventListener('change', drawPreview);
    pictureInputs.push(/** @type {HTMLInputElement} */ (input));
    pictureFields.append(wrap);
    drawPictureControls();
    if (focus) input.focus();
  }

  /** @param {HTMLInputElement} input */
  function removePicture(input) {
    const values = pictureInputs.filter((i) => i !== input).map((i) => i.value);
    pictureInputs.length = 0;
    pictureFields.replaceChildren();
    for (const v of values) addPictureField(v, false);
    drawPictureControls();
    addPicture.focus();
  }

  function useSamples() {
    for (const name of SAMPLES) {
      if (pictureInputs.length >= MAX_PICTURES) break;
      addPictureField(`${location.origin}/web/samples/${name}.svg`, false);
    }
    drawPreview();
  }

  function drawPictureControls() {
    addPicture.hidden = pictureInputs.length >= MAX_PICTURES;
    samples.hidden = pictureInputs.length > MAX_PICTURES - SAMPLES.length;
    drawPreview();
    drawControls();
  }

  function drawPreview() {
    const urls = pictureInputs.map((i) => i.value.trim()).filter((u) => /^https?:\/\//i.test(u));
    preview.className = `pictures compose-preview pictures-${urls.length}`;
    fill(preview, urls.map((url, i) => h('img', { src: url, alt: t('post.picture', { n: i + 1, total: urls.length }) })));
    preview.hidden = urls.length === 0;
  }

  /**
   * A photo from the phone: uploading, stored (`media`), or refused.
   * @typedef {{ file: File, local: string | null, media: MediaView | null, uploading: boolean, waiting: boolean,
   *   abort: (() => void) | null, tile: HTMLElement, thumb: HTMLImageElement, progress: HTMLProgressElement,
   *   status: HTMLElement, retry: HTMLButtonElement, remove: HTMLButtonElement, alt: HTMLInputElement }} Photo
   */
  /** @type {Photo[]} */
  const photos = [];
  const photoTiles = h('div', { class: 'photo-tiles', role: 'list', 'aria-label': t('compose.photos') });
  const photoInputId = 'compose-photos';
  // The input is the control (focusable, named by the label that shows
  // instead of it); the label is what a finger taps.
  const photoInput = /** @type {HTMLInputElement} */ (h('input', {
    id: photoInputId, type: 'file', accept: 'image/*', multiple: true, class: 'visually-hidden', 'data-field': 'mediaIds',
  }));
  const photoPicker = h('label', { for: photoInputId, class: 'button-quiet small photo-picker' }, `📷 ${t('compose.addPhotos')}`);
  const photoNote = h('p', { class: 'hint', 'aria-live': 'polite', hidden: true });
  const onlyUrls = h('p', { class: 'hint', hidden: true }, t('compose.photosOrUrls'));
  const onlyPhotos = h('p', { class: 'hint', hidden: true }, t('compose.photosOrUrls'));
  photoInput.addEventListener('change', () => {
    const files = Array.from(photoInput.files ?? []);
    const room = Math.max(0, MAX_PICTURES - photos.length);
    for (const file of files.slice(0, room)) addPhoto(file);
    photoNote.textContent = files.length > room ? t('compose.tooManyPhotos', { n: files.length - room }) : '';
    photoNote.hidden = files.length <= room;
    photoInput.value = '';
    drawControls();
  });

  /** @param {File} file */
  function addPhoto(file) {
    const local = URL.createObjectURL(file);
    const thumb = h('img', { src: local, alt: '', class: 'photo-thumb' });
    const progress = h('progress', { max: 1, value: 0 });
    const status = h('p', { class: 'photo-status fine', 'aria-live': 'polite' });
    const retry = h('button', { type: 'button', class: 'link-button', hidden: true }, t('compose.retry'));
    const remove = h('button', { type: 'button', class: 'link-button danger', 'data-key': 'remove-photo' }, '✕');
    const alt = h('input', { type: 'text', maxlength: 1500, placeholder: t('compose.altText'), 'data-key': 'alt' });
    const tile = h('div', { class: 'photo-tile', role: 'listitem' },
      thumb, progress, status, alt, h('div', { class: 'photo-actions' }, retry, remove));
    /** @type {Photo} */
    const photo = { file, local, media: null, uploading: false, waiting: false, abort: null, tile, thumb, progress, status, retry, remove, alt };
    retry.addEventListener('click', () => {
      startUpload(photo);
      photo.alt.focus();
    });
    remove.addEventListener('click', () => removePhoto(photo));
    photos.push(photo);
    photoTiles.append(tile);
    startUpload(photo);
  }

  /**
   * Uploads sent at once: the service takes four per account at a time
   * (429 past them), and a phone's uplink is shared by them anyway. The
   * rest wait their turn, in order.
   */
  const UPLOADS_AT_ONCE = 3;
  let sending = 0;

  /** @param {Photo} photo */
  function startUpload(photo) {
    photo.uploading = true;
    photo.retry.hidden = true;
    photo.tile.classList.remove('failed');
    photo.progress.hidden = false;
    photo.progress.value = 0;
    if (sending >= UPLOADS_AT_ONCE) {
      photo.waiting = true;
      photo.status.textContent = t('compose.waiting');
      drawControls();
      return;
    }
    void send(photo);
  }

  /** @param {Photo} photo */
  async function send(photo) {
    photo.waiting = false;
    sending += 1;
    photo.status.textContent = t('compose.uploading');
    drawControls();
    // Alt text typed before the upload began goes with it.
    const description = photo.alt.value.trim() || undefined;
    const { done, abort } = uploadPicture(photo.file, {
      description,
      onProgress: (fraction) => {
        photo.progress.value = fraction;
      },
    });
    photo.abort = abort;
    try {
      const media = await done;
      if (!photos.includes(photo)) {
        // Removed while its last bytes went up: not left for the sweep.
        call('DELETE', `/media/${media.id}`).catch(() => {});
        return;
      }
      photo.media = media;
      photo.status.textContent = t('compose.uploaded');
      photo.tile.classList.add('uploaded');
      photo.progress.hidden = true;
      showStoredPreview(photo, media);
    } catch (error) {
      if (!photos.includes(photo)) return;
      photo.tile.classList.add('failed');
      photo.status.textContent = t('compose.uploadFailed', { detail: error instanceof ApiError ? error.words : t('error.generic') });
      photo.retry.hidden = false;
    } finally {
      sending -= 1;
      photo.uploading = false;
      photo.abort = null;
      const next = photos.find((p) => p.waiting);
      if (next) void send(next);
      drawControls();
    }
  }

  /**
   * The tile shows the service's preview once it is stored (what readers
   * will see, turned upright), and the phone's copy is let go.
   * @param {Photo} photo
   * @param {MediaView} media
   */
  function showStoredPreview(photo, media) {
    const url = mediaUrl(media.previewUrl);
    if (!url) return;
    const local = photo.local;
    photo.thumb.addEventListener('load', () => {
      if (local) URL.revokeObjectURL(local);
      if (photo.local === local) photo.local = null;
    }, { once: true });
    photo.thumb.addEventListener('error', () => {
      if (local && photo.local === local) photo.thumb.src = local;
    }, { once: true });
    photo.thumb.src = url;
  }

  /** @param {Photo} photo */
  function removePhoto(photo) {
    const at = photos.indexOf(photo);
    if (at < 0) return;
    photos.splice(at, 1);
    photo.abort?.();
    photo.tile.remove();
    if (photo.local) URL.revokeObjectURL(photo.local);
    photo.local = null;
    // Stored already: deleted now rather than left to the day's sweep.
    if (photo.media) call('DELETE', `/media/${photo.media.id}`).catch(() => {});
    photoNote.hidden = true;
    drawControls();
    // Focus stays in the photos: on the next tile's remove button, or on
    // the picker.
    const next = photos[at] ?? photos[at - 1];
    if (next) next.remove.focus();
    else photoInput.focus();
  }

  const publish = h('button', { type: 'submit', class: 'button-primary wide', 'aria-describedby': 'compose-publish-note' }, t('compose.publish'));
  const publishNote = h('p', { class: 'hint', id: 'compose-publish-note', 'aria-live': 'polite', hidden: true }, t('compose.stillUploading'));

  /**
   * What may be done now: a post has photos or picture URLs, at most nine;
   * numbers follow the tiles' order; Publish waits for every upload.
   */
  function drawControls() {
    const uploading = photos.some((p) => p.uploading);
    const hasUrls = pictureInputs.length > 0;
    const hasPhotos = photos.length > 0;
    photoInput.disabled = hasUrls || photos.length >= MAX_PICTURES;
    photoPicker.classList.toggle('disabled', hasUrls);
    photoPicker.hidden = photos.length >= MAX_PICTURES;
    onlyUrls.hidden = !hasUrls;
    addPicture.disabled = hasPhotos;
    samples.disabled = hasPhotos;
    onlyPhotos.hidden = !hasPhotos;
    photos.forEach((p, i) => {
      const n = i + 1;
      p.progress.setAttribute('aria-label', t('compose.uploadProgress', { n }));
      p.retry.setAttribute('aria-label', t('compose.retryPhoto', { n }));
      p.remove.setAttribute('aria-label', t('compose.removePhoto', { n }));
      p.alt.setAttribute('aria-label', t('compose.altTextOf', { n }));
    });
    publish.disabled = uploading;
    publishNote.hidden = !uploading;
  }

  const device = field({
    label: t('compose.device'), name: 'device', value: localStorage.getItem(DEVICE_KEY) ?? '', hint: t('compose.deviceHint'), maxlength: 100,
  });
  const placeName = field({ label: t('compose.placeName'), name: 'geo.name', maxlength: 100 });
  const lat = field({ label: t('compose.lat'), name: 'geo.lat', type: 'number', step: 'any', inputmode: 'decimal' });
  const lon = field({ label: t('compose.lon'), name: 'geo.lon', type: 'number', step: 'any', inputmode: 'decimal' });
  const locate = h('button', { type: 'button', class: 'button-quiet small', onclick: useMyLocation }, t('compose.locate'));

  /** @param {Event} event */
  async function useMyLocation(event) {
    const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
    await busy(button, () => new Promise((resolve) => {
      navigator.geolocation.getCurrentPosition(
        (p) => {
          lat.input.value = p.coords.latitude.toFixed(5);
          lon.input.value = p.coords.longitude.toFixed(5);
          resolve(undefined);
        },
        () => resolve(undefined),
        { timeout: 10_000 },
      );
    }));
  }

  const visibilityId = 'compose-visibility';
  const visibility = h(
    'select',
    { id: visibilityId, name: 'visibility', 'data-field': 'visibility' },
    VISIBILITIES.map((v) => h('option', { value: v }, t(`vis.${v}`))),
  );

  const form = h(
    'form',
    { class: 'card form compose', novalidate: true, 'aria-labelledby': 'page-title' },
    formAlert(),
    content.wrap,
    emoji,
    h('fieldset', { class: 'photos-set' },
      h('legend', {}, t('compose.photos')),
      onlyUrls,
      photoInput, photoPicker,
      h('p', { class: 'field-error', id: `${photoInputId}-error`, hidden: true }),
      photoNote, photoTiles),
    h('fieldset', { class: 'pictures-set' },
      h('legend', {}, t('compose.pictures')),
      onlyPhotos,
      pictureFields,
      h('div', { class: 'row' }, addPicture, samples),
      preview),
    device.wrap,
    h('details', { class: 'place' },
      h('summary', {}, t('compose.place')),
      placeName.wrap,
      h('div', { class: 'row two' }, lat.wrap, lon.wrap),
      locate),
    h('div', { class: 'field' },
      h('label', { for: visibilityId }, t('compose.visibility')),
      visibility,
      h('p', { class: 'field-error', id: `${visibilityId}-error`, hidden: true })),
    publish,
    publishNote,
  );
  drawPictureControls();

  const create = idempotentCreates();
  onSubmit(form, async () => {
    if (photos.some((p) => p.uploading)) {
      const detail = t('compose.stillUploading');
      throw new ApiError(0, { type: 'about:blank', title: detail, status: 0, detail, code: 'uploading' }, null);
    }
    const pictureUrls = pictureInputs.map((i) => i.value.trim());
    // Alt text typed while or after a photo went up is set before it is
    // posted; a photo the service refused is left out.
    const stored = photos.flatMap((p) => (p.media ? [{ photo: p, media: p.media }] : []));
    await Promise.all(stored.map(async (s) => {
      const description = s.photo.alt.value.trim();
      if (description !== s.media.description) {
        s.media = await call('PUT', `/media/${s.media.id}`, { json: { description } });
        s.photo.media = s.media;
      }
    }));
    const mediaIds = stored.map((s) => s.media.id);
    /** @type {Record<string, unknown>} */
    const body = {
      category: pictureUrls.length || mediaIds.length ? 'PICTURE' : 'TEXT',
      content: content.input.value,
      pictureUrls,
      visibility: visibility.value,
    };
    if (mediaIds.length) body.mediaIds = mediaIds;
    const model = device.input.value.trim();
    if (model) body.device = model;
    if (lat.input.value !== '' || lon.input.value !== '' || placeName.input.value.trim()) {
      body.geo = {
        lat: lat.input.value === '' ? null : Number(lat.input.value),
        lon: lon.input.value === '' ? null : Number(lon.input.value),
        ...(placeName.input.value.trim() ? { name: placeName.input.value.trim() } : {}),
      };
    }
    const post = await create(body, (key) => call('POST', '/posts', { json: body, headers: { 'idempotency-key': key } }));
    if (model) localStorage.setItem(DEVICE_KEY, model);
    for (const p of photos) if (p.local) URL.revokeObjectURL(p.local);
    location.hash = `#/post/${post.id}`;
  });
  main.append(form);
}
