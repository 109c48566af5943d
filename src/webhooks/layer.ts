import { Layer } from "effect"
import { WebhookSender } from "../platform/outbound/WebhookSender.ts"
import { ReposLive } from "../repos/layers.ts"
import { WebhookDispatcherLive } from "./Dispatcher.ts"

/**
 * The webhooks face: the dispatcher that sends queued deliveries to the receivers. It needs a database pool, the
 * configuration, the keys and the lifecycle, given by main.ts.
 */
export const WebhooksLive = WebhookDispatcherLive.pipe(Layer.provide(WebhookSender.Default), Layer.provide(ReposLive))
