"""Forms for the node pages: the operator actions on one node (the filters are inventory.filtersets)."""

from __future__ import annotations

from django import forms

from . import services
from .errors import InventoryError
from .models import Node, NodeTaint, Tenant
from .trust import accept_devices


def reason_field() -> forms.CharField:
    """Return the optional reason every action takes; the service checks it (its message shows)."""
    return forms.CharField(
        required=False,
        label="Reason",
        strip=False,
        # No maxlength: a browser cuts a longer paste silently; the service refuses it and says why.
        widget=forms.TextInput(attrs={"placeholder": "optional", "size": 18}),
    )


class ActionForm(forms.Form):
    """An operator action on one node; `apply` runs the service and maps its refusal to a field."""

    reason = reason_field()

    def apply(self, node: Node) -> bool:
        """Run the action; return False with the service's message attached to a field on refusal."""
        if not self.is_valid():
            return False
        try:
            self.run(node)
        except InventoryError as err:
            self.add_service_error(err)
            return False
        return True

    def run(self, node: Node) -> None:
        raise NotImplementedError

    def add_service_error(self, err: InventoryError) -> None:
        """Attach the message to the field it names ("key: …", "value must …"), else to the form."""
        head, sep, rest = err.message.partition(": ")
        if sep and head in self.fields:
            self.add_error(head, rest)
            return
        first = err.message.split(" ", 1)[0]
        self.add_error(first if first in self.fields else None, err.message)


class ButtonForm(ActionForm):
    """An action that is a button: its reason is the one input the row of buttons shares."""

    def add_prefix(self, field_name: str) -> str:
        return "reason" if field_name == "reason" else super().add_prefix(field_name)


class CordonForm(ButtonForm):
    def run(self, node: Node) -> None:
        services.cordon(node, self.cleaned_data["reason"])


class UncordonForm(ButtonForm):
    def run(self, node: Node) -> None:
        services.uncordon(node, self.cleaned_data["reason"])


class MaintenanceOnForm(ButtonForm):
    def run(self, node: Node) -> None:
        services.set_maintenance(node, True, self.cleaned_data["reason"])


class MaintenanceOffForm(ButtonForm):
    def run(self, node: Node) -> None:
        services.set_maintenance(node, False, self.cleaned_data["reason"])


class TaintForm(ActionForm):
    key = forms.CharField(max_length=253)
    value = forms.CharField(max_length=253, required=False)
    effect = forms.ChoiceField(choices=NodeTaint.Effect.choices, initial=NodeTaint.Effect.NO_SCHEDULE)

    def run(self, node: Node) -> None:
        data = self.cleaned_data
        services.add_taint(node, data["key"], data["value"], data["effect"], data["reason"])


class UntaintForm(ActionForm):
    key = forms.CharField(max_length=253)

    def run(self, node: Node) -> None:
        if not services.remove_taint(node, self.cleaned_data["key"], self.cleaned_data["reason"]):
            raise InventoryError("NOT_FOUND", f"the node has no taint {self.cleaned_data['key']}")


class DedicateForm(ActionForm):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.all(), to_field_name="slug", empty_label=None)

    def run(self, node: Node) -> None:
        services.dedicate(node, self.cleaned_data["tenant"].slug, self.cleaned_data["reason"])


class UndedicateForm(ActionForm):
    def run(self, node: Node) -> None:
        services.dedicate(node, None, self.cleaned_data["reason"])


class LabelForm(ActionForm):
    # The service owns key rules, so that its message (e.g. the bc.dev/ refusal) is what shows.
    key = forms.CharField(max_length=253)
    value = forms.CharField(max_length=253, required=False)

    def run(self, node: Node) -> None:
        data = self.cleaned_data
        services.set_label(node, data["key"].strip(), data["value"], data["reason"])


class UnlabelForm(ActionForm):
    key = forms.CharField(max_length=253)

    def run(self, node: Node) -> None:
        if not services.remove_label(node, self.cleaned_data["key"], self.cleaned_data["reason"]):
            raise InventoryError("NOT_FOUND", f"the node has no label {self.cleaned_data['key']}")


class AcceptDevicesForm(ActionForm):
    """Accept every device the node reported that waits for an operator (inventory.trust)."""

    def run(self, node: Node) -> None:
        accept_devices(node.name, reason=self.cleaned_data["reason"])


# URL action name -> form; the row actions on the pool page are the first four.
ACTIONS: dict[str, type[ActionForm]] = {
    "cordon": CordonForm,
    "uncordon": UncordonForm,
    "maintenance-on": MaintenanceOnForm,
    "maintenance-off": MaintenanceOffForm,
    "taint": TaintForm,
    "untaint": UntaintForm,
    "dedicate": DedicateForm,
    "undedicate": UndedicateForm,
    "label": LabelForm,
    "unlabel": UnlabelForm,
    "accept-devices": AcceptDevicesForm,
}
ROW_ACTIONS = ("cordon", "uncordon")


# Actions whose fields the panel shows; the others are buttons, so their errors show above them.
PANEL_FORMS = ("taint", "dedicate", "label")


def panel_forms(
    bound: dict[str, ActionForm] | None = None, *, dedicated: str | None = None
) -> dict[str, ActionForm]:
    """Return a fresh form for every action with parameters, keeping any bound (failed) one.

    The dedicate form starts at the node's current dedication, when it has one.
    """
    forms_ = {name: ACTIONS[name](prefix=name) for name in PANEL_FORMS}
    if dedicated:
        forms_["dedicate"] = DedicateForm(prefix="dedicate", initial={"tenant": dedicated})
    forms_.update(bound or {})
    return forms_
