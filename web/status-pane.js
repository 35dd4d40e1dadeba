// The status pane: the session's mode, tool access, network, sandbox, project and its context file, and the paths
// granted to the session (each with a button to revoke it). Changing tool access or the network asks the API.
import { $, el } from './dom.js';
import { api } from './client.js';

/** The pane of a page that shows the session `state.sessionId` and reports failures with `addMessage`. */
function create(deps) {
  const state = deps.state;
  const addMessage = deps.addMessage;

  function showContext(ctx) {
    $('mode').textContent =
      ctx.mode + (ctx.requestedMode && ctx.requestedMode !== ctx.mode ? ' (requested ' + ctx.requestedMode + ')' : '');
    $('tool-access').value = ctx.toolAccess;
    if (ctx.network) $('network').value = ctx.network;
    if (ctx.sandbox) {
      const sandbox = $('sandbox');
      sandbox.textContent = ctx.sandbox === 'on' ? 'on (bubblewrap)' : ctx.sandbox + ': ' + (ctx.sandboxNote || '');
      sandbox.className = ctx.sandbox === 'on' ? '' : 'note';
      sandbox.setAttribute('data-state', ctx.sandbox);
    }
    $('context-file').textContent = ctx.projectContextFile || 'none';
    $('project-dir').textContent = ctx.projectDir;
    const note = $('mode-note');
    note.hidden = !ctx.modeNote;
    note.textContent = ctx.modeNote || '';
  }

  /** The paths allowed for the session, each with when it lapses and a button to revoke it. */
  function showGrants(grants) {
    $('grant-list').replaceChildren(
      ...(grants.length
        ? grants.map((g) =>
            el('li', { 'data-grant': g.id }, [
              el('code', { text: g.op + ' ' + g.path }),
              el('span', {
                class: 'waited',
                text:
                  Date.parse(g.expiresAt) > Date.now() ? ' until ' + new Date(g.expiresAt).toLocaleString() : ' lapsed',
                title: g.expiresAt,
              }),
              el('button', {
                type: 'button',
                class: 'revoke',
                text: 'Revoke',
                'aria-label': 'Revoke ' + g.op + ' ' + g.path,
                onclick: async () => {
                  try {
                    await api('DELETE', '/sessions/' + state.sessionId + '/grants/' + g.id);
                  } catch (err) {
                    addMessage('error', 'Could not revoke the grant: ' + err.message);
                  }
                },
              }),
            ])
          )
        : [el('li', { class: 'note', text: 'Nothing beyond the project.' })])
    );
  }

  $('tool-access').addEventListener('change', async function (ev) {
    try {
      await api('PATCH', '/sessions/' + state.sessionId, { toolAccess: ev.target.value });
    } catch (err) {
      addMessage('error', 'Could not change tool access: ' + err.message);
    }
  });

  $('network').addEventListener('change', async function (ev) {
    try {
      await api('PATCH', '/sessions/' + state.sessionId, { network: ev.target.value });
    } catch (err) {
      addMessage('error', 'Could not change the network setting: ' + err.message);
    }
  });

  return { showContext: showContext, showGrants: showGrants };
}

export { create };
