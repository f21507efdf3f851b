"""The tokens page (/account/tokens/): make a personal API token, see it once, list and revoke.
Plain forms, no page script but the Copy button's (the page module tokens). A new token's secret is
put in the answer to the POST that made it and nowhere else (not in the session, not in a
redirect): reloading the page cannot show it again. Nor can it make a second token: each form
carries an id, and a form sent again (the browser's "resend" of a reload) is answered as such."""
from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from designer.pipelines.accounts import tokens

SENT_FORMS_KEPT = 20  # per session: the ids of the last forms that made a token, with the token's name


def _page(request, status=200, **context):
    return render(request, "pipelines/tokens.html", {"tokens": tokens.active(request.user), "max_name": tokens.MAX_NAME,
                                                     "form_id": uuid.uuid4().hex, **context}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def token_page(request):
    if request.method == "GET":
        return _page(request)
    form_id = request.POST.get("form_id", "")
    sent = dict(request.session.get("token_forms", []))
    if form_id and form_id in sent:
        return _page(request, status=409, error=f"This form was sent already: the token “{sent[form_id]}” was made then, and "
                                                "its secret shown that once. No other token was made. If you did not copy "
                                                "it, revoke that token and make a new one.")
    try:
        token, secret = tokens.create(request.user, request.POST.get("name", ""))
    except ValueError as e:
        return _page(request, status=400, error=str(e), name=request.POST.get("name", ""))
    if form_id:
        request.session["token_forms"] = [*list(sent.items())[-(SENT_FORMS_KEPT - 1):], [form_id, token.name]]
    return _page(request, new_token=token, secret=secret)


@login_required
@require_POST
def token_revoke(request, pk):
    token = tokens.revoke(request.user, pk)
    if token is None:
        messages.error(request, "You have no such token (or it is revoked already).")
    else:
        messages.success(request, f"Token “{token.name}” ({token.prefix}…) is revoked: scripts using it now get 401.")
    return redirect("api_tokens")
