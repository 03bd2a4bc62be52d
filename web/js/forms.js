// @ts-check
// Labelled fields, busy buttons, and problems shown where they belong:
// next to the input a problem's `field` names, else at the top of the form.

import { ApiError } from './api.js';
import { h, uniqueId } from './dom.js';
import { t } from './i18n.js';

/**
 * @typedef {{
 *   label: string, name: string, type?: string, value?: string, hint?: string,
 *   required?: boolean, autocomplete?: string, maxlength?: number, minlength?: number,
 *   placeholder?: string, rows?: number, inputmode?: string, step?: string,
 * }} FieldSpec
 */

/**
 * A label, its input (or a textarea when `rows` is given), a hint and a slot
 * for the input's error, wired together for assistive technology.
 * @param {FieldSpec} spec
 * @returns {{ wrap: HTMLElement, input: HTMLInputElement | HTMLTextAreaElement }}
 */
export function field(spec) {
  const id = uniqueId(spec.name.replace(/[^a-zA-Z0-9]/g, '-'));
  const hintId = spec.hint ? `${id}-hint` : null;
  const attrs = {
    id,
    name: spec.name,
    'data-field': spec.name,
    required: spec.required,
    autocomplete: spec.autocomplete,
    maxlength: spec.maxlength,
    minlength: spec.minlength,
    placeholder: spec.placeholder,
    inputmode: spec.inputmode,
    'aria-describedby': hintId,
    value: spec.value,
  };
  const input = spec.rows
    ? h('textarea', { ...attrs, rows: spec.rows })
    : h('input', { ...attrs, type: spec.type ?? 'text', step: spec.step });
  return { wrap: fieldWrap(id, spec.label, input, spec.hint, hintId), input };
}

/**
 * A control with its label before it, its hint and its error slot: what
 * `field` and `selectField` wrap theirs in.
 * @param {string} id the control's id
 * @param {string} label
 * @param {HTMLElement} input
 * @param {string | undefined} hint
 * @param {string | null} hintId
 */
function fieldWrap(id, label, input, hint, hintId) {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    input,
    hint && h('p', { class: 'hint', id: hintId }, hint),
    h('p', { class: 'field-error', id: `${id}-error`, hidden: true }),
  );
}

/**
 * A labelled `<select>` with its hint and error slot, wired as `field` wires
 * an input. `options` are [value, words] pairs; a value of '' is the
 * "choose one" prompt.
 * @param {{ label: string, name: string, options: [string, string][], value?: string, hint?: string }} spec
 * @returns {{ wrap: HTMLElement, input: HTMLSelectElement }}
 */
export function selectField(spec) {
  const id = uniqueId(spec.name.replace(/[^a-zA-Z0-9]/g, '-'));
  const hintId = spec.hint ? `${id}-hint` : null;
  const input = h(
    'select',
    { id, name: spec.name, 'data-field': spec.name, 'aria-describedby': hintId },
    spec.options.map(([value, words]) => h('option', { value, selected: value === (spec.value ?? '') }, words)),
  );
  return { wrap: fieldWrap(id, spec.label, input, spec.hint, hintId), input };
}

/**
 * A checkbox with its label after it, and an error slot.
 * @param {{ label: string, name: string, checked?: boolean }} spec
 * @returns {{ wrap: HTMLElement, input: HTMLInputElement }}
 */
export function checkField(spec) {
  const id = uniqueId(spec.name.replace(/[^a-zA-Z0-9]/g, '-'));
  const input = h('input', { type: 'checkbox', id, name: spec.name, 'data-field': spec.name, checked: spec.checked });
  const wrap = h(
    'div',
    { class: 'field check' },
    h('span', { class: 'check-row' }, input, h('label', { for: id }, spec.label)),
    h('p', { class: 'field-error', id: `${id}-error`, hidden: true }),
  );
  return { wrap, input };
}

/**
 * A problem found before anything is sent, shaped as the service's, so it
 * shows next to the field it names like any other.
 * @param {string} name the field's `data-field`
 * @param {string} detail
 */
export function invalid(name, detail) {
  return new ApiError(400, { type: 'about:blank', title: '', status: 400, code: 'invalid_input', field: name, detail }, null);
}

/** The form-level slot for problems that name no field of the form. */
export function formAlert() {
  return h('p', { class: 'form-error', role: 'alert', hidden: true });
}

/** @param {Element} form */
export function clearErrors(form) {
  for (const input of form.querySelectorAll('[aria-invalid="true"]')) {
    input.removeAttribute('aria-invalid');
    const errorId = `${input.id}-error`;
    const described = (input.getAttribute('aria-describedby') ?? '').split(' ').filter((x) => x && x !== errorId);
    if (described.length) input.setAttribute('aria-describedby', described.join(' '));
    else input.removeAttribute('aria-describedby');
  }
  for (const slot of form.querySelectorAll('.field-error, .form-error')) {
    slot.textContent = '';
    /** @type {HTMLElement} */ (slot).hidden = true;
  }
}

/**
 * The inputs a problem's field may mean, most precise first:
 * `pictureUrls[1]` → `pictureUrls[1]`, `pictureUrls`; `geo.lat` → `geo.lat`, `geo`.
 * @param {string} field
 */
function candidates(field) {
  const out = [field];
  let rest = field;
  for (;;) {
    const cut = Math.max(rest.lastIndexOf('['), rest.lastIndexOf('.'));
    if (cut <= 0) break;
    rest = rest.slice(0, cut);
    out.push(rest);
  }
  return out;
}

/**
 * Shows an error in the form: next to the field it names, or at the top.
 * @param {Element} form
 * @param {unknown} error
 */
export function showError(form, error) {
  clearErrors(form);
  const words = error instanceof ApiError ? error.words : t('error.generic');
  const named = error instanceof ApiError && error.field ? error.field : null;
  if (named) {
    for (const name of candidates(named)) {
      const input = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
      if (!(input instanceof HTMLElement)) continue;
      const slot = form.querySelector(`#${CSS.escape(input.id)}-error`);
      if (!(slot instanceof HTMLElement)) continue;
      slot.textContent = words;
      slot.hidden = false;
      input.setAttribute('aria-invalid', 'true');
      input.closest('details')?.setAttribute('open', '');
      const described = input.getAttribute('aria-describedby');
      input.setAttribute('aria-describedby', described ? `${slot.id} ${described}` : slot.id);
      input.focus();
      return;
    }
  }
  const alert = form.querySelector('.form-error');
  if (alert instanceof HTMLElement) {
    alert.textContent = words;
    alert.hidden = false;
  } else {
    window.alert(words);
  }
}

/**
 * Runs `action` with `button` disabled and marked busy, so a request shows
 * it is under way and a second click sends nothing twice.
 * @template T
 * @param {HTMLButtonElement | null} button
 * @param {() => Promise<T>} action
 * @returns {Promise<T>}
 */
export async function busy(button, action) {
  if (!button) return action();
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await action();
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/**
 * Wires a form's submit: errors cleared, the submit button busy, problems
 * shown in the form.
 * @param {HTMLFormElement} form
 * @param {() => Promise<void>} action
 */
export function onSubmit(form, action) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors(form);
    const button = form.querySelector('button[type="submit"]');
    try {
      await busy(button instanceof HTMLButtonElement ? button : null, action);
    } catch (error) {
      showError(form, error);
    }
  });
}
