import { Layer } from "effect"
import { ChannelSender } from "../platform/outbound/ChannelSender.ts"
import { ReposLive } from "../repos/layers.ts"
import { WebhookDispatcherLive } from "./Dispatcher.ts"

/**
 * The webhooks face: the dispatcher that sends queued deliveries to the receivers. It needs a database pool, the
 * configuration, the keys and the lifecycle, given by main.ts.
 */
export const WebhooksLive = WebhookDispatcherLive.pipe(Layer.provide(ChannelSender.Default), Layer.provide(ReposLive))
