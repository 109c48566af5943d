import { Layer } from "effect"
import { ChannelSender } from "../platform/outbound/ChannelSender.ts"
import { ReposLive } from "../repos/layers.ts"
import { AlertDispatcherLive } from "./Dispatcher.ts"

/**
 * The alerts face: the dispatcher that sends queued deliveries to the receivers of every channel kind. It needs a
 * database pool, the configuration, the keys and the lifecycle, given by main.ts.
 */
export const AlertsLive = AlertDispatcherLive.pipe(Layer.provide(ChannelSender.Default), Layer.provide(ReposLive))
