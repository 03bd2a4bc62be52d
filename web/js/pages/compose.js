// @ts-check
// Writing a post: text with emoji, up to nine photos from the phone
// (each uploaded at once, with its progress, alt text, and a way to remove
// or retry it) or picture URLs, shown as the grid readers will see, the
// device model, an optional place, and who may see it.

import { ApiError, call, idempotentCreates, uploadPicture } from '../api.js';
import { fill, h } from '../dom.js';
import { busy, field, formAlert, onSubmit } from '../forms.js';
import { t } from '../i18n.js';

const MAX_PICTURES = 9;
const EMOJI = ['😀', '😂', '😍', '🥰', '😎', '😭', '👍', '🙏', '🎉', '❤️', '🌸', '☕', '🍜', '🏖️', '🐱', '✨'];
const VISIBILITIES = /** @type {const} */ (['public', 'followers', 'friends', 'private']);
const SAMPLES = ['lake', 'hills', 'city'];
const DEVICE_KEY = 'moments.device';

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
  }

  function drawPreview() {
    const urls = pictureInputs.map((i) => i.value.trim()).filter((u) => /^https?:\/\//i.test(u));
    preview.className = `pictures compose-preview pictures-${urls.length}`;
    fill(preview, urls.map((url, i) => h('img', { src: url, alt: t('post.picture', { n: i + 1, total: urls.length }) })));
    preview.hidden = urls.length === 0;
  }

  /**
   * A photo being uploaded, or uploaded.
   * @typedef {{ file: File, local: string, media: import('../types.js').MediaView | null,
   *   uploading: boolean, abort: (() => void) | null, tile: HTMLElement, progress: HTMLProgressElement,
   *   status: HTMLElement, retry: HTMLButtonElement, alt: HTMLInputElement }} Photo
   */
  /** @type {Photo[]} */
  const photos = [];
  const photoTiles = h('div', { class: 'photo-tiles', role: 'list', 'aria-label': t('compose.photos') });
  const photoInputId = 'compose-photos';
  const photoInput = /** @type {HTMLInputElement} */ (h('input', {
    id: photoInputId, type: 'file', accept: 'image/*', multiple: true, class: 'visually-hidden', 'data-key': 'photos',
  }));
  const photoPicker = h('label', { for: photoInputId, class: 'button-quiet small photo-picker' }, `📷 ${t('compose.addPhotos')}`);
  photoInput.addEventListener('change', () => {
    for (const file of Array.from(photoInput.files ?? [])) {
      if (photos.length >= MAX_PICTURES) break;
      addPhoto(file);
    }
    photoInput.value = '';
    drawPhotoControls();
  });

  /** @param {File} file */
  function addPhoto(file) {
    const n = photos.length + 1;
    const progress = h('progress', { max: 1, value: 0, 'aria-label': t('compose.uploading') });
    const status = h('p', { class: 'photo-status fine', 'aria-live': 'polite' });
    const retry = h('button', { type: 'button', class: 'link-button', hidden: true }, t('compose.retry'));
    const alt = /** @type {HTMLInputElement} */ (h('input', {
      type: 'text', maxlength: 1500, placeholder: t('compose.altText'), 'aria-label': t('compose.altTextOf', { n }), 'data-key': 'alt',
    }));
    const local = URL.createObjectURL(file);
    const tile = h('div', { class: 'photo-tile', role: 'listitem' },
      h('img', { src: local, alt: '', class: 'photo-thumb' }),
      progress, status, alt,
      h('div', { class: 'row' },
        retry,
        h('button', { type: 'button', class: 'link-button danger', 'data-key': 'remove-photo',
          'aria-label': t('compose.removePhoto', { n }), onclick: () => removePhoto(photo) }, '✕')));
    /** @type {Photo} */
    const photo = { file, local, media: null, uploading: false, abort: null, tile, progress, status, retry, alt };
    retry.addEventListener('click', () => startUpload(photo));
    photos.push(photo);
    photoTiles.append(tile);
    startUpload(photo);
  }

  /** @param {Photo} photo */
  async function startUpload(photo) {
    photo.uploading = true;
    photo.retry.hidden = true;
    photo.tile.classList.remove('failed');
    photo.progress.hidden = false;
    photo.status.textContent = t('compose.uploading');
    const { done, abort } = uploadPicture(photo.file, (fraction) => {
      photo.progress.value = fraction;
    });
    photo.abort = abort;
    try {
      photo.media = await done;
      photo.status.textContent = t('compose.uploaded');
      photo.tile.classList.add('uploaded');
      photo.progress.hidden = true;
    } catch (error) {
      if (!photos.includes(photo)) return;
      photo.tile.classList.add('failed');
      photo.status.textContent = t('compose.uploadFailed', { detail: error instanceof ApiError ? error.words : t('error.generic') });
      photo.retry.hidden = false;
    } finally {
      photo.uploading = false;
      photo.abort = null;
    }
  }

  /** @param {Photo} photo */
  function removePhoto(photo) {
    photo.abort?.();
    photos.splice(photos.indexOf(photo), 1);
    photo.tile.remove();
    URL.revokeObjectURL(photo.local);
    // Stored already: deleted now rather than left to the day's sweep.
    if (photo.media) call('DELETE', `/media/${photo.media.id}`).catch(() => {});
    drawPhotoControls();
    photoPicker.focus();
  }

  function drawPhotoControls() {
    photoPicker.hidden = photos.length >= MAX_PICTURES;
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
      photoInput, photoPicker, photoTiles),
    h('fieldset', { class: 'pictures-set' },
      h('legend', {}, t('compose.pictures')),
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
    h('button', { type: 'submit', class: 'button-primary wide' }, t('compose.publish')),
  );
  drawPictureControls();

  const create = idempotentCreates();
  onSubmit(form, async () => {
    if (photos.some((p) => p.uploading)) {
      const detail = t('compose.stillUploading');
      throw new ApiError(0, { type: 'about:blank', title: detail, status: 0, detail, code: 'uploading' }, null);
    }
    const pictureUrls = pictureInputs.map((i) => i.value.trim());
    const stored = photos.flatMap((p) => (p.media ? [p] : []));
    // Alt text typed while or after a photo went up is set before it is posted.
    await Promise.all(stored.map(async (p) => {
      const description = p.alt.value.trim();
      if (p.media && description !== p.media.description) {
        p.media = await call('PUT', `/media/${p.media.id}`, { json: { description } });
      }
    }));
    const mediaIds = stored.flatMap((p) => (p.media ? [p.media.id] : []));
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
    location.hash = `#/post/${post.id}`;
  });
  main.append(form);
}
