"""The webhooks endpoints: /api/v1/webhooks, each subscription, its secret, its test and its log."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from config.api.base import BerthAPIView
from config.api.pages import position_of, queryset_source
from config.api.schema import errors

from . import services
from .calendar import feed_of
from .models import EVENT_TYPES, Delivery


def by_id(row) -> tuple:
    """Return where a subscription or delivery stands in its list."""
    return position_of(row, ("id",))


TAGS = ["webhooks"]


class SubscriptionSerializer(serializers.Serializer):
    """A webhook subscription; `secret` only in the answer that made or rotated it."""

    id = serializers.IntegerField()
    url = serializers.URLField()
    events = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField(allow_blank=True)
    enabled = serializers.BooleanField()
    disabledReason = serializers.CharField(allow_null=True)
    failingSince = serializers.DateTimeField(allow_null=True)
    createdAt = serializers.DateTimeField()
    secret = serializers.CharField(required=False, help_text="whsec_…: shown once.")


class DeliveryTrySerializer(serializers.Serializer):
    """One attempt to deliver an event."""

    at = serializers.DateTimeField()
    statusCode = serializers.IntegerField(
        allow_null=True, help_text="The receiver's status; null when none came."
    )
    durationMs = serializers.IntegerField()
    answer = serializers.CharField(
        allow_blank=True, help_text="The receiver's answer, 200 printable characters."
    )
    error = serializers.CharField(allow_blank=True)


class DeliverySerializer(serializers.Serializer):
    """An event sent, or being sent, to a subscription, with every attempt."""

    id = serializers.IntegerField()
    eventId = serializers.CharField(help_text="evt_…: the webhook-id header of every attempt.")
    type = serializers.ChoiceField(choices=EVENT_TYPES)
    status = serializers.ChoiceField(choices=Delivery.Status.choices)
    attempts = serializers.IntegerField()
    createdAt = serializers.DateTimeField()
    nextAttemptAt = serializers.DateTimeField(allow_null=True, help_text="Only while pending.")
    deliveredAt = serializers.DateTimeField(allow_null=True)
    lastStatusCode = serializers.IntegerField(allow_null=True)
    lastError = serializers.CharField(allow_blank=True)
    tries = DeliveryTrySerializer(many=True)


class SubscribeSerializer(serializers.Serializer):
    """What a subscription asks for."""

    url = serializers.URLField(max_length=services.MAX_URL)
    events = serializers.ListField(child=serializers.ChoiceField(choices=services.SUBSCRIBABLE), min_length=1)
    description = serializers.CharField(max_length=services.MAX_DESCRIPTION, required=False, allow_blank=True)


class WebhooksView(BerthAPIView):
    @extend_schema(
        operation_id="webhooks_list",
        tags=TAGS,
        summary="List your webhook subscriptions",
        responses={200: SubscriptionSerializer(many=True), **errors(400, 401)},
    )
    def get(self, request):
        found = services.Subscription.objects.filter(owner=request.user)
        return self.paginated(
            queryset_source(found, ("id",)), by_id, lambda page: [services.describe(s) for s in page]
        )

    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_create",
        summary="Subscribe a URL to events; the answer holds its secret, shown once",
        description="Node events are for operators (403). At most 20 subscriptions per user (400).",
        request=SubscribeSerializer,
        responses={201: SubscriptionSerializer, **errors(400, 401, 403)},
    )
    def post(self, request):
        made = services.subscribe(request.user, request.data)
        return Response(services.describe(made, with_secret=True), status=status.HTTP_201_CREATED)


class WebhookView(BerthAPIView):
    @extend_schema(
        operation_id="webhooks_get",
        tags=TAGS,
        summary="Get one of your webhook subscriptions",
        description="Another user's subscription answers 404, as one that does not exist.",
        responses={200: SubscriptionSerializer, **errors(401, 404)},
    )
    def get(self, request, webhook_id):
        return Response(services.describe(services.own(request.user, webhook_id)))

    @extend_schema(
        operation_id="webhooks_delete",
        tags=TAGS,
        summary="Remove a webhook subscription",
        responses={204: None, **errors(401, 404)},
    )
    def delete(self, request, webhook_id):
        services.remove(request.user, webhook_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class RotateSecretView(BerthAPIView):
    @extend_schema(
        operation_id="webhooks_rotate_secret",
        tags=TAGS,
        summary="Give a subscription a new secret, shown once",
        request=None,
        responses={200: SubscriptionSerializer, **errors(401, 404)},
    )
    def post(self, request, webhook_id):
        return Response(services.describe(services.rotate_secret(request.user, webhook_id), with_secret=True))


class EnableView(BerthAPIView):
    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_enable",
        summary="Turn a disabled subscription back on",
        request=None,
        responses={200: SubscriptionSerializer, **errors(401, 404)},
    )
    def post(self, request, webhook_id):
        return Response(services.describe(services.enable(request.user, webhook_id)))


class TestView(BerthAPIView):
    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_test",
        summary="Send a webhook.test event to this subscription",
        request=None,
        responses={
            202: inline_serializer("WebhookTestQueued", {"deliveryId": serializers.IntegerField()}),
            **errors(401, 404),
        },
    )
    def post(self, request, webhook_id):
        delivery = services.send_test(request.user, webhook_id)
        return Response({"deliveryId": delivery.pk}, status=status.HTTP_202_ACCEPTED)


class DeliveriesView(BerthAPIView):
    @extend_schema(
        tags=TAGS,
        operation_id="webhooks_deliveries",
        summary="List a subscription's deliveries, newest first, with every attempt",
        responses={200: DeliverySerializer(many=True), **errors(400, 401, 404)},
    )
    def get(self, request, webhook_id):
        subscription = services.own(request.user, webhook_id)
        return self.paginated(
            queryset_source(services.deliveries_of(subscription), ("id",), descending=True),
            by_id,
            services.describe_deliveries,
        )


class CalendarView(BerthAPIView):
    @extend_schema(
        operation_id="calendar_get",
        tags=["calendar"],
        summary="Get your secret iCalendar URL (made on first use)",
        responses={200: inline_serializer("CalendarUrl", {"url": serializers.URLField()}), **errors(401)},
    )
    def get(self, request):
        feed = feed_of(request.user)
        return Response({"url": request.build_absolute_uri(f"/calendar/{feed.token}.ics")})
